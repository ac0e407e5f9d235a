"""One exception tree: every exception class of `ai_platform` is defined in errors.py, and nothing raises the bare
`PlatformError`, so a caller (or a test) tells failures apart by class, never by message text.

Read with `ast`, not by importing: a class defined inside a function or behind a lazy import is found too.
"""

from __future__ import annotations

import ast
import builtins
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "ai_platform"
TREE = "ai_platform/errors.py"

BUILTIN_EXCEPTIONS = {
    name for name, value in vars(builtins).items() if isinstance(value, type) and issubclass(value, BaseException)
}


def _base_name(node: ast.expr) -> str | None:
    """`Name` or `module.Name` as written in a class's bases; None for anything else (a call, a subscript)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _sources() -> dict[str, ast.Module]:
    return {
        path.relative_to(ROOT).as_posix(): ast.parse(path.read_text(encoding="utf-8"), str(path))
        for path in sorted(PACKAGE.rglob("*.py"))
    }


def exception_classes(sources: dict[str, ast.Module]) -> set[tuple[str, str]]:
    """(file, class) for every class that derives, through any chain of bases, from a built-in exception.

    A base written `module.Name` counts when Name is an exception of this package or a builtin's, or when it ends
    in Error/Exception (a library's own: `httpx.HTTPError`, `tarfile.FilterError`).
    """
    classes = [
        (file, node, {n for n in map(_base_name, node.bases) if n})
        for file, tree in sources.items()
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef)
    ]
    known = set(BUILTIN_EXCEPTIONS)
    found: set[tuple[str, str]] = set()
    grew = True
    while grew:
        grew = False
        for file, node, bases in classes:
            if (file, node.name) in found:
                continue
            if any(b in known or b.endswith(("Error", "Exception")) for b in bases):
                found.add((file, node.name))
                known.add(node.name)
                grew = True
    return found


def bare_raises(sources: dict[str, ast.Module]) -> dict[str, list[int]]:
    """Lines, by file, that raise `PlatformError(...)` (or `errors.PlatformError(...)`) itself."""
    found: dict[str, list[int]] = {}
    for file, tree in sources.items():
        for node in ast.walk(tree):
            call = node.exc if isinstance(node, ast.Raise) else None
            if isinstance(call, ast.Call) and _base_name(call.func) == "PlatformError":
                found.setdefault(file, []).append(node.lineno)
    return found


def test_every_exception_class_is_defined_in_errors_py() -> None:
    outside = {key for key in exception_classes(_sources()) if key[0] != TREE}
    assert sorted(outside) == [], "define it in ai_platform/errors.py"


def test_nothing_raises_the_bare_platform_error() -> None:
    found = bare_raises(_sources())
    assert found == {}, "raise a subclass named for the failure (errors.py), not PlatformError itself"


def test_every_class_of_errors_py_is_a_platform_error() -> None:
    import ai_platform.errors as errors

    defined = [v for v in vars(errors).values() if isinstance(v, type) and v.__module__ == errors.__name__]
    assert len(defined) > 50
    assert [c.__name__ for c in defined if not issubclass(c, errors.PlatformError)] == []


PLANTED = """
import tarfile
from ai_platform.errors import ImageError, PlatformError

class Direct(ValueError): ...
class Library(tarfile.FilterError): ...
class Ours(ImageError): ...
class Second(Ours): ...
class NotOne: ...
class Mixin(NotOne): ...

def f() -> None:
    class Inner(Exception): ...
    if f:
        raise PlatformError("bare")
    raise ImageError("a subclass")
"""


@pytest.mark.parametrize("check", ["classes", "raises"])
def test_the_walk_finds_what_is_planted(check: str) -> None:
    sources = {"ai_platform/x.py": ast.parse(PLANTED), TREE: ast.parse("class ImageError(Exception): ...")}
    if check == "classes":
        assert sorted(name for file, name in exception_classes(sources) if file != TREE) == [
            "Direct",
            "Inner",
            "Library",
            "Ours",
            "Second",
        ]
    else:
        assert bare_raises(sources) == {"ai_platform/x.py": [15]}


# -- the failures a caller tells apart, each raised as its class (the classes other tests do not reach)

PROMPT = b'user: "Review: {{text}}"\n'


def test_a_tag_blob_or_layout_that_is_not_there_is_image_not_found(tmp_path: Path) -> None:
    from ai_platform.errors import ImageNotFoundError, NotAnImageLayoutError
    from ai_platform.oci.layout import OciLayout

    layout = OciLayout(tmp_path / "layout")
    layout.put_blob(b"{}", "application/vnd.oci.empty.v1+json")
    with pytest.raises(ImageNotFoundError, match="no tag 'latest'"):
        layout.resolve("latest")
    with pytest.raises(ImageNotFoundError, match="is missing"):
        layout.read_blob(f"sha256:{'0' * 64}")
    (tmp_path / "folder").mkdir()
    with pytest.raises(NotAnImageLayoutError, match="not an OCI image layout") as refused:
        OciLayout(tmp_path / "folder").resolve("latest")
    assert isinstance(refused.value, ImageNotFoundError), "base.fetch pulls into a folder that is no layout yet"


def test_an_artifact_of_another_kind_is_an_artifact_type_error(tmp_path: Path) -> None:
    from ai_platform.errors import ArtifactTypeError
    from ai_platform.image.unpack import unpack
    from ai_platform.oci.layout import OciLayout
    from ai_platform.prompts import bundle

    layout = OciLayout(tmp_path / "layout")
    config = layout.put_blob(b"{}", "application/vnd.oci.image.config.v1+json")
    image = layout.put_manifest({"schemaVersion": 2, "config": config.to_json(), "layers": []}, ["image"])
    with pytest.raises(ArtifactTypeError, match="not a prompt bundle"):
        bundle.load(layout, "image")
    with pytest.raises(ArtifactTypeError, match="expected one folder under /models, found 0"):
        unpack(layout, image.digest, tmp_path / "serve")


def test_a_folder_with_nothing_to_pack_is_unpackable(tmp_path: Path) -> None:
    from ai_platform.errors import UnpackableFolderError
    from ai_platform.image.build import build
    from ai_platform.oci.layout import OciLayout

    (tmp_path / "empty").mkdir()
    with pytest.raises(UnpackableFolderError, match="no files to pack"):
        build(OciLayout(tmp_path / "layout"), tmp_path / "empty", "m", created="2026-01-05T09:00:00Z", mtime=0)
    (tmp_path / "linked").mkdir()
    (tmp_path / "linked" / "config.json").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(UnpackableFolderError, match="links and special files are not packed"):
        build(OciLayout(tmp_path / "layout"), tmp_path / "linked", "m", created="2026-01-05T09:00:00Z", mtime=0)


def test_two_prompts_of_one_name_are_a_prompt_error(tmp_path: Path) -> None:
    from ai_platform.errors import DuplicatePromptNameError, PromptError
    from ai_platform.oci.layout import OciLayout
    from ai_platform.prompts import bundle
    from ai_platform.prompts.compiler import compile_bytes

    twice = [compile_bytes(PROMPT, "prompts/review.prompt"), compile_bytes(PROMPT + b"\n", "a/review.prompt")]
    with pytest.raises(DuplicatePromptNameError, match="two prompt files compile to the same name") as refused:
        bundle.build(OciLayout(tmp_path / "layout"), "m", twice)
    assert isinstance(refused.value, PromptError)


def test_a_malformed_placeholder_is_a_prompt_error_where_it_is_rendered() -> None:
    """A stored document is rendered as it is: a `{{` that opens no placeholder is a PromptError (the gateway
    answers 422), not a ValueError that escapes as a 500."""
    from ai_platform.errors import MalformedPlaceholderError, PromptError
    from ai_platform.prompts.compiler import compile_bytes
    from ai_platform.prompts.render import render_messages

    document = compile_bytes(PROMPT, "prompts/review.prompt").document
    document["messages"][0]["content"] = "Review: {{ 1 }}"
    with pytest.raises(MalformedPlaceholderError, match="malformed placeholder") as refused:
        render_messages(document, {"text": "x"})
    assert isinstance(refused.value, PromptError) and refused.value.at == 8


def test_a_weights_folder_or_manifest_that_is_not_one_is_told_apart(tmp_path: Path) -> None:
    from ai_platform.errors import NoWeightsError, WeightsManifestError
    from ai_platform.weights import manifest

    (tmp_path / "file").write_text("{}")
    with pytest.raises(NoWeightsError, match="not a folder"):
        manifest.scan(tmp_path / "file")
    with pytest.raises(WeightsManifestError, match="not a weights manifest"):
        manifest.load(tmp_path / "file")
    (tmp_path / "file").write_text("{")
    with pytest.raises(WeightsManifestError, match="cannot read manifest"):
        manifest.load(tmp_path / "file")


def test_a_query_duckdb_refuses_is_a_query_error_not_a_missing_warehouse(tmp_path: Path) -> None:
    from ai_platform.errors import NoWarehouseYetError, WarehouseQueryError
    from ai_platform.warehouse.file import Warehouse

    warehouse = Warehouse(tmp_path / "w.duckdb")
    with pytest.raises(NoWarehouseYetError):
        warehouse.query("SELECT 1")
    warehouse.migrate()
    with pytest.raises(WarehouseQueryError, match="query failed"):
        warehouse.query("SELECT * FROM no_such_table")
