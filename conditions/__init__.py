"""What is asked: the cohort, budgets, conditions, prompts, image variants and cues.

Plain Python; it uses ``scoring`` for targets and never imports ``runner`` or Ray. So far it
reads COCO ``instances.json`` files and picks the referents that PROTOCOL §8 deems eligible.
"""

from conditions._coco import (
    CocoAnnotation,
    CocoCategory,
    CocoImage,
    CocoInstances,
    eligible_referents,
    load_instances,
)
from conditions._errors import ConditionsError, DataFileError

__all__ = [
    "CocoAnnotation",
    "CocoCategory",
    "CocoImage",
    "CocoInstances",
    "ConditionsError",
    "DataFileError",
    "eligible_referents",
    "load_instances",
]
