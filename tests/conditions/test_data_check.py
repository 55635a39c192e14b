"""What a data root holds, checked before any run (conditions.check_data_root)."""

from __future__ import annotations

import os
import pickle
import shutil
from pathlib import Path

import pytest

from conditions import (
    SOURCES,
    DataCheck,
    DataRoot,
    DataState,
    SynthSpec,
    check_data_root,
    generate_synthetic,
    load_instances,
    load_refs,
)

SPEC = SynthSpec(seed=5, images=20)


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("synth-check")
    generate_synthetic(out, SPEC)
    return out


@pytest.fixture
def root(pristine: Path, tmp_path: Path) -> DataRoot:
    """A fresh, writable copy of a small synthetic root, for a test to damage."""
    shutil.copytree(pristine, tmp_path / "data")
    return DataRoot.at(tmp_path / "data")


def _row(check: DataCheck, source: str, item: str) -> tuple[DataState, str]:
    [found] = [f for f in check.findings if f.source == source and f.item == item]
    return found.state, found.found


def _named_images(root: DataRoot, source: str) -> list[str]:
    """The image files the evaluation refs of ``source`` name, as the check should count them."""
    [s] = [s for s in SOURCES if s.name == source]
    instances = load_instances(root.folder(s) / "instances.json")
    names = {i.id: i.file_name for i in instances.images}
    refs = load_refs(root.folder(s) / s.refs_file)
    return sorted({names[r.image_id] for r in refs if r.split in s.splits})


def test_a_whole_synthetic_root_is_ready_and_counted(root: DataRoot) -> None:
    check = check_data_root(root)
    assert check.ready and not check.problems
    assert [(f.source, f.item) for f in check.findings] == [
        (s.name, item) for s in SOURCES for item in (s.refs_file, "instances.json", "images")
    ]
    for s in SOURCES:
        refs = load_refs(root.folder(s) / s.refs_file)
        evaluation = sum(r.split in s.splits for r in refs)
        assert _row(check, s.name, s.refs_file) == (
            DataState.OK,
            f"{len(refs):,} refs; {evaluation:,} in {'/'.join(s.splits)}",
        )
        instances = load_instances(root.folder(s) / "instances.json")
        assert _row(check, s.name, "instances.json")[1] == (
            f"{len(instances.images):,} images, {len(instances.annotations):,} annotations"
        )
        named = len(_named_images(root, s.name))
        assert _row(check, s.name, "images") == (DataState.OK, f"{named} of {named} present")
    assert check.images_in_folder == SPEC.images


def test_a_deleted_pickle_a_corrupt_json_and_a_removed_image_each_show_on_their_row(
    root: DataRoot,
) -> None:
    (root.root / "refcoco+" / "refs(unc).p").unlink()
    (root.root / "refcocog" / "instances.json").write_text('{"images": [')
    gone = _named_images(root, "refcoco")[0]
    (root.images / gone).unlink()

    check = check_data_root(root)

    assert not check.ready
    assert _row(check, "refcoco+", "refs(unc).p") == (DataState.MISSING, "no such file")
    state, found = _row(check, "refcocog", "instances.json")
    assert state is DataState.MALFORMED and found.startswith("not JSON")
    state, found = _row(check, "refcoco", "images")
    assert state is DataState.MISSING and found.startswith("1 of ") and gone in found
    # What they hold is still counted; what needs a broken file waits for it.
    assert _row(check, "refcoco+", "instances.json")[0] is DataState.OK
    assert _row(check, "refcocog", "refs(umd).p")[0] is DataState.OK
    assert _row(check, "refcoco+", "images")[0] is DataState.UNCHECKED
    assert _row(check, "refcocog", "images")[0] is DataState.UNCHECKED
    assert [(p.source, p.item) for p in check.problems] == [
        ("refcoco", "images"),
        ("refcoco+", "refs(unc).p"),
        ("refcocog", "instances.json"),
    ]
    fixes = {p.item: p.fix for p in check.problems}
    assert "refcoco+.zip" in fixes["refs(unc).p"] and str(root.root) in fixes["refs(unc).p"]
    assert "refcocog.zip" in fixes["instances.json"]
    assert "train2014.zip" in fixes["images"]


def test_a_missing_images_folder_is_one_problem_on_every_images_row(root: DataRoot) -> None:
    shutil.rmtree(root.images)
    check = check_data_root(root)
    assert {_row(check, s.name, "images") for s in SOURCES} == {
        (DataState.MISSING, "no such folder")
    }
    [problem] = check.problems
    assert problem.path == root.images and "images.cocodataset.org" in problem.fix
    assert check.images_in_folder is None


def test_a_missing_source_folder_is_one_problem_named_by_the_folder(root: DataRoot) -> None:
    shutil.rmtree(root.root / "refcocog")
    check = check_data_root(root)
    assert _row(check, "refcocog", "refs(umd).p") == (DataState.MISSING, "no such folder")
    assert _row(check, "refcocog", "instances.json") == (DataState.MISSING, "no such folder")
    [problem] = check.problems
    assert problem.path == root.root / "refcocog"


def test_only_the_sources_asked_are_checked(root: DataRoot) -> None:
    shutil.rmtree(root.root / "refcocog")
    check = check_data_root(root, ("refcoco",))
    assert check.ready
    assert {f.source for f in check.findings} == {"refcoco"}


def test_images_are_looked_up_by_name_never_opened(root: DataRoot) -> None:
    # A file that is no image still counts as present: the check reads no image (the cohort
    # build reads the ones it draws), so it takes seconds on COCO's 13 GB.
    (root.images / _named_images(root, "refcoco")[0]).write_bytes(b"not a jpeg")
    assert check_data_root(root).ready


def test_a_folder_where_an_image_should_be_is_missing(root: DataRoot) -> None:
    name = _named_images(root, "refcoco")[0]
    (root.images / name).unlink()
    (root.images / name).mkdir()
    state, found = _row(check_data_root(root), "refcoco", "images")
    assert state is DataState.MISSING and found.endswith(f"(first: {name})")


class _Exploit:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return os.system, (f"touch {self.marker}",)


def test_a_pickle_asking_for_code_is_malformed_and_nothing_runs(root: DataRoot) -> None:
    marker = root.root / "pwned"
    path = root.root / "refcoco" / "refs(unc).p"
    path.write_bytes(pickle.dumps([{"ref_id": 1, "x": _Exploit(marker)}], protocol=2))
    state, found = _row(check_data_root(root), "refcoco", "refs(unc).p")
    assert state is DataState.MALFORMED and "refuses global" in found
    assert not marker.exists()


def test_refs_naming_annotations_the_instances_lack_are_malformed(root: DataRoot) -> None:
    path = root.root / "refcoco" / "refs(unc).p"
    refs = pickle.loads(path.read_bytes())
    refs[3]["ann_id"] = 999_999
    path.write_bytes(pickle.dumps(refs, protocol=2))
    check = check_data_root(root)
    state, found = _row(check, "refcoco", "refs(unc).p")
    assert state is DataState.MALFORMED
    assert found.startswith(f"1 of {len(refs)} refs name an annotation instances.json lacks")
    assert f"ref_id {refs[3]['ref_id']}, annotation 999999" in found
    assert _row(check, "refcoco", "images")[0] is DataState.UNCHECKED


def test_refs_with_no_evaluation_split_are_malformed(root: DataRoot) -> None:
    path = root.root / "refcocog" / "refs(umd).p"
    refs = [dict(r, split="train") for r in pickle.loads(path.read_bytes())]
    path.write_bytes(pickle.dumps(refs, protocol=2))
    state, found = _row(check_data_root(root), "refcocog", "refs(umd).p")
    assert (state, found) == (DataState.MALFORMED, f"{len(refs)} refs, none in val/test")


def test_the_real_fixture_is_ready(real_root: DataRoot) -> None:
    check = check_data_root(real_root, ("refcoco",))
    assert check.ready, check.problems
    assert _row(check, "refcoco", "refs(unc).p")[1] == "4 refs; 4 in val/testA/testB"
    assert _row(check, "refcoco", "images")[1] == "1 of 1 present"
