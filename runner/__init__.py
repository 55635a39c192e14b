"""Moving requests and bytes: backends, limits, the store, the actors and the CLI.

The only package that knows about Ray; ``conditions`` and ``scoring`` never import it.
"""
