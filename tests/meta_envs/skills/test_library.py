"""Skills as files (meta_envs/skills/skill.py) and the library (library.py): the SKILL.md rules with their
error messages, hostile SKILL.md input, byte-identical round trips, all-or-nothing loads, atomic saves,
versions and diffs."""

from __future__ import annotations

import os
import pickle
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meta_envs.skills import library as library_module
from meta_envs.skills.library import LibraryDiff, LibraryError, SkillLibrary, UnknownSkill, check_skill
from meta_envs.skills.skill import (SCRIPT_PATH, Skill, SkillFormatError, count_tokens, parse_skill_md,
                                    skill_from_files)

HEAT = """---
name: heat-then-place
description: Heat an object in the microwave, then put it in a receptacle.
license: MIT
metadata:
  author: agentgym
---
1. go to {object location}
2. take {object} from {object location}
3. heat {object} with microwave 1
"""


def md(name: str = "heat-then-place", description: str = "Heat things.", body: str = "1. go\n", extra: str = "") -> str:
    return f"---\nname: {name}\ndescription: {description}\n{extra}---\n{body}"


def tree_bytes(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# ----------------------------------------------------------------------------- SKILL.md rules
def test_parse_reads_every_field_and_writes_the_same_bytes_back():
    skill = parse_skill_md(HEAT, folder_name="heat-then-place")
    assert (skill.name, skill.license, skill.metadata, skill.kind) == ("heat-then-place", "MIT", {"author": "agentgym"}, "text")
    assert skill.body.startswith("1. go to {object location}\n") and skill.body.endswith("microwave 1\n")
    assert skill.to_skill_md() == HEAT


@pytest.mark.parametrize("name", ["", "Heat", "-heat", "heat-", "heat--place", "heat_place", "heat place", "a" * 65, "héat"])
def test_bad_names_are_rejected_saying_what_was_expected(name):
    with pytest.raises(SkillFormatError, match="expected a name of 1-64 lowercase letters, digits and single hyphens"):
        parse_skill_md(md(name=f"'{name}'"))


def test_name_limits_and_folder_name():
    assert parse_skill_md(md(name="a")).name == "a" and parse_skill_md(md(name="a" * 64)).name == "a" * 64
    with pytest.raises(SkillFormatError, match="expected a name .* got int"):
        parse_skill_md(md(name="123"))
    with pytest.raises(SkillFormatError, match="expected the name to equal the folder name 'heat'"):
        parse_skill_md(md(), folder_name="heat")


@pytest.mark.parametrize("description, match", [
    ("''", "expected description as non-empty text of 1-1024 characters, got ''"),
    ("'   '", "non-empty text"),
    ("[a, b]", "got list"),
    ("'" + "d" * 1025 + "'", "expected description of at most 1024 characters, got 1025"),
])
def test_bad_descriptions_are_rejected(description, match):
    with pytest.raises(SkillFormatError, match=match):
        parse_skill_md(md(description=description))


def test_description_limits_and_missing_description():
    assert len(parse_skill_md(md(description="d" * 1024)).description) == 1024
    assert parse_skill_md(md(description="d")).description == "d"
    with pytest.raises(SkillFormatError, match="expected description .* got NoneType"):
        parse_skill_md("---\nname: x\n---\nbody")


def test_token_budget_is_counted_by_the_documented_rule():
    assert count_tokens("Heat the apple, then put it in the fridge.") == 11  # 9 words + ',' + '.'
    assert count_tokens("a" * 25) == 3 and count_tokens(" \n\t ") == 0  # 10-character pieces; whitespace free
    at_budget = "word " * 5000
    assert parse_skill_md(md(body=at_budget)).tokens == 5000
    with pytest.raises(SkillFormatError, match="expected a body of at most 5000 tokens, got 5001"):
        parse_skill_md(md(body=at_budget + "one"))
    with pytest.raises(SkillFormatError, match="at most 3 tokens, got 4"):
        parse_skill_md(md(body="1. go north"), token_budget=3)  # '1', '.', 'go', 'north'
    assert parse_skill_md(md(body="1. go"), token_budget=3).tokens == 3
    # a single huge "word" is no way around the budget
    with pytest.raises(SkillFormatError, match="at most 5000 tokens, got 10000"):
        parse_skill_md(md(body="x" * 100_000))


@pytest.mark.parametrize("text, match", [
    ("name: x\ndescription: y\n", "expected SKILL.md to start with a '---' line"),
    ("---\nname: x\ndescription: y\n", "expected a closing '---' line"),
    ("---\nname: [x\n---\n", "expected valid YAML front matter"),
    ("---\n- name\n- x\n---\n", "expected the front matter to be a YAML mapping, got list"),
    ("---\n---\nbody", "expected the front matter to be a YAML mapping, got NoneType"),
    (md(extra="version: 2\n"), r"expected front-matter keys among .* got \['version'\]; put extra fields under metadata"),
    (md(extra="metadata: [1, 2]\n"), "expected metadata as a map of strings to strings, got list"),
    (md(extra="metadata:\n  n: 3\n"), "expected metadata entries as short strings .* quote the value"),
    (md(extra="compatibility: '" + "c" * 501 + "'\n"), "expected compatibility of at most 500 characters"),
    (md(extra="kind: binary\n"), r"expected kind to be one of \['text', 'code'\], got 'binary'"),
    (md(extra="kind: code\nmetadata:\n  kind: text\n"), "expected one kind"),
    (md(extra="kind: code\n"), "expected a kind: code skill to bring scripts/skill.py"),
    (12, "expected SKILL.md as text, got int"),
])
def test_malformed_skill_md_is_a_clear_format_error(text, match):
    with pytest.raises(SkillFormatError, match=match):
        parse_skill_md(text)


def test_hostile_skill_md_fails_fast_with_a_format_error():
    laughs = "---\n" + "a0: &a0 [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]\n" for i in range(1, 9)) + "name: *a8\ndescription: y\n---\n"
    for hostile in (laughs, "---\n" + "[" * 5000 + "\n---\n", "x" * (300 * 1024), "---\nname: !!python/object:os.system x\n---\n"):
        start = time.perf_counter()
        with pytest.raises(SkillFormatError):
            parse_skill_md(hostile)
        assert time.perf_counter() - start < 2.0


def test_crlf_is_normalised():
    assert parse_skill_md(HEAT.replace("\n", "\r\n")) == parse_skill_md(HEAT)


def test_code_skills_bring_their_script_and_resources_are_checked():
    files = {"SKILL.md": md(name="count-lines", extra="metadata:\n  kind: code\n"), SCRIPT_PATH: "print(1)\n",
             "tests/test_skill.py": "def test(): pass\n"}
    skill = skill_from_files(files, folder_name="count-lines")
    assert (skill.kind, skill.script, list(skill.resources)) == ("code", "print(1)\n", ["tests/test_skill.py"])
    assert skill.files() == dict(sorted(files.items()))
    text_skill = skill_from_files({"SKILL.md": md(), SCRIPT_PATH: "print(1)\n"})
    assert text_skill.script is None and SCRIPT_PATH in text_skill.resources  # a text skill's script is a resource
    for bad in ("../escape.md", "/etc/passwd", "a//b.md", "refs/./x", "a\\b", "a/b/c/d/e.md", "x\0y"):
        with pytest.raises(SkillFormatError, match="expected a relative resource path"):
            skill_from_files({"SKILL.md": md(), bad: "x"})
    with pytest.raises(SkillFormatError, match="expected a skill folder holding SKILL.md"):
        skill_from_files({"README.md": "x"})


names = st.from_regex(r"[a-z0-9]{1,10}(-[a-z0-9]{1,10}){0,3}", fullmatch=True)
texts = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\x85\u2028\u2029"), min_size=1, max_size=60)


@given(name=names, description=texts.filter(str.strip), body=st.text(max_size=200).map(lambda s: s.replace("\r", "")),
       meta=st.dictionaries(st.from_regex(r"[a-z]{1,8}", fullmatch=True).filter(lambda k: k != "kind"), texts, max_size=3),
       license_=st.none() | texts.filter(str.strip))
def test_any_valid_skill_round_trips_byte_identically(name, description, body, meta, license_):
    skill = check_skill(Skill(name=name, description=description, body=body, metadata=meta, license=license_))
    text = skill.to_skill_md()
    again = parse_skill_md(text, folder_name=name)
    assert again == skill and again.to_skill_md() == text and again.body == body


def test_skills_are_values_that_pickle():
    skill = parse_skill_md(HEAT)
    assert pickle.loads(pickle.dumps(skill)) == skill and hash(skill) == hash(parse_skill_md(HEAT))
    assert skill != parse_skill_md(HEAT.replace("microwave 1", "microwave 2"))


# ----------------------------------------------------------------------------- the library
def sample_library() -> SkillLibrary:
    heat = parse_skill_md(HEAT)
    code = skill_from_files({"SKILL.md": md(name="count-lines", extra="metadata:\n  kind: code\n"), SCRIPT_PATH: "print(1)\n"})
    notes = Skill("search-then-answer", "Search, read, answer.", body="1. search[{question}]\n",
                  resources={"references/how.md": "Read the top hit first.\n"})
    return SkillLibrary([notes, heat, code])


def test_library_reads_like_a_sorted_mapping():
    lib = sample_library()
    assert lib.names() == ["count-lines", "heat-then-place", "search-then-answer"] == [s.name for s in lib]
    assert len(lib) == 3 and "count-lines" in lib and "nope" not in lib
    assert lib.index()[1] == ("heat-then-place", "Heat an object in the microwave, then put it in a receptacle.")
    assert lib.tokens == sum(s.tokens for s in lib) > 0
    with pytest.raises(UnknownSkill, match="got 'heat-then-plase'; did you mean heat-then-place"):
        lib.get("heat-then-plase")
    with pytest.raises(LibraryError, match="expected unique skill names, got 'heat-then-place' twice"):
        SkillLibrary([parse_skill_md(HEAT), parse_skill_md(HEAT)])


def test_operations_return_new_libraries_and_versions_follow_content():
    lib = sample_library()
    before = lib.version
    edited = lib.with_skill(Skill("heat-then-place", "Heat things.", body="1. heat {object}\n"))
    removed = lib.without("count-lines")
    assert lib.version == before and len(lib) == 3  # the original is untouched
    assert lib.diff(edited) == LibraryDiff(added=(), removed=(), changed=("heat-then-place",))
    assert lib.diff(removed) == LibraryDiff(added=(), removed=("count-lines",), changed=())
    assert removed.diff(lib) == LibraryDiff(added=("count-lines",), removed=(), changed=()) and not lib.diff(lib)
    assert len({lib.version, edited.version, removed.version, SkillLibrary().version}) == 4
    assert SkillLibrary(reversed(list(lib))).version == before == SkillLibrary(list(lib)).version
    assert removed.with_skill(lib.get("count-lines")) == lib
    with pytest.raises(UnknownSkill):
        lib.without("nope")


def test_with_skill_validates_hand_built_skills():
    with pytest.raises(SkillFormatError, match="expected a name"):
        SkillLibrary().with_skill(Skill("Bad Name", "d"))
    with pytest.raises(SkillFormatError, match="at most 10 tokens"):
        SkillLibrary().with_skill(Skill("ok", "d", body="w " * 11), token_budget=10)
    with pytest.raises(SkillFormatError, match="expected a kind: code skill to bring"):
        SkillLibrary().with_skill(Skill("ok", "d", kind="code"))


def test_save_load_round_trip_is_byte_identical(tmp_path):
    lib = sample_library()
    lib.save(tmp_path / "a")
    loaded = SkillLibrary.load(tmp_path / "a")
    assert loaded == lib and loaded.version == lib.version and pickle.loads(pickle.dumps(loaded)) == lib
    loaded.save(tmp_path / "b")
    assert tree_bytes(tmp_path / "a") == tree_bytes(tmp_path / "b")
    assert set(tree_bytes(tmp_path / "a")) == {"count-lines/SKILL.md", f"count-lines/{SCRIPT_PATH}",
                                              "heat-then-place/SKILL.md", "search-then-answer/SKILL.md",
                                              "search-then-answer/references/how.md"}
    assert (tmp_path / "a" / "heat-then-place" / "SKILL.md").read_text() == HEAT


def test_save_replaces_a_library_whole_and_leaves_no_temp_dirs(tmp_path):
    sample_library().save(tmp_path / "lib")
    smaller = SkillLibrary([parse_skill_md(HEAT)])
    smaller.save(tmp_path / "lib")
    assert SkillLibrary.load(tmp_path / "lib") == smaller
    assert os.listdir(tmp_path) == ["lib"]


def test_a_failed_save_leaves_the_old_library_intact(tmp_path, monkeypatch):
    old = sample_library()
    old.save(tmp_path / "lib")
    before = tree_bytes(tmp_path / "lib")
    calls = []

    def failing(folder, skill):
        calls.append(skill.name)
        if len(calls) == 2:
            raise OSError("disk full")
        return real(folder, skill)

    real = library_module._write_skill
    monkeypatch.setattr(library_module, "_write_skill", failing)
    with pytest.raises(OSError, match="disk full"):
        old.with_skill(Skill("new-one", "d", body="1. x\n")).save(tmp_path / "lib")
    assert tree_bytes(tmp_path / "lib") == before and os.listdir(tmp_path) == ["lib"]


def test_save_refuses_to_replace_what_is_not_a_library(tmp_path):
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "thesis.tex").write_text("precious")
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    (tmp_path / "file").write_text("x")
    for target, match in (("home", r"holds \['thesis.tex'\]"), ("repo", r"holds \['.git'\]"), ("file", "got a file")):
        with pytest.raises(LibraryError, match=match):
            sample_library().save(tmp_path / target)
    assert (tmp_path / "home" / "thesis.tex").read_text() == "precious" and (tmp_path / "repo" / ".git").is_dir()


def test_load_is_all_or_nothing_and_lists_every_problem(tmp_path):
    sample_library().save(tmp_path / "lib")
    root = tmp_path / "lib"
    (root / "Bad").mkdir()
    (root / "Bad" / "SKILL.md").write_text(md(name="bad"))
    (root / "empty").mkdir()
    (root / "loose.md").write_text("x")
    (root / "binary").mkdir()
    (root / "binary" / "SKILL.md").write_bytes(b"---\xff\xfe")
    (root / ".hidden").mkdir()  # hidden entries are ignored
    with pytest.raises(LibraryError) as caught:
        SkillLibrary.load(root)
    message = str(caught.value)
    assert message.startswith("4 problem(s) in library") and "nothing was loaded" in message
    for expected in ("Bad: expected the name to equal the folder name 'Bad'", "empty: expected SKILL.md in the skill folder",
                     "loose.md: expected a skill folder (not a symlink or file)", "binary: expected UTF-8 text"):
        assert expected in message


def test_load_refuses_symlinks_and_oversized_files(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("host secret")
    root = tmp_path / "lib"
    sample_library().save(root)
    os.symlink(secret, root / "heat-then-place" / "notes.md")
    with pytest.raises(LibraryError, match="expected plain files, got a symlink 'notes.md'"):
        SkillLibrary.load(root)
    os.unlink(root / "heat-then-place" / "notes.md")
    os.symlink(root / "heat-then-place", root / "linked")
    with pytest.raises(LibraryError, match="linked: expected a skill folder"):
        SkillLibrary.load(root)
    os.unlink(root / "linked")
    (root / "heat-then-place" / "big.md").write_bytes(b"x" * (2 * 1024 * 1024))
    with pytest.raises(LibraryError, match="big.md"):
        SkillLibrary.load(root)
    with pytest.raises(LibraryError, match="missing"):
        SkillLibrary.load(tmp_path / "nowhere")


def test_diff_text_is_a_reviewable_unified_diff():
    old = sample_library()
    new = old.without("count-lines").with_skill(Skill("heat-then-place", "Heat things.", body="1. heat {object}\n"))
    text = old.diff_text(new)
    assert "--- a/count-lines/SKILL.md\n+++ /dev/null\n" in text and f"--- a/count-lines/{SCRIPT_PATH}\n" in text
    assert "--- a/heat-then-place/SKILL.md\n+++ b/heat-then-place/SKILL.md\n" in text
    assert "-3. heat {object} with microwave 1\n" in text and "+1. heat {object}\n" in text
    assert "search-then-answer" not in text and old.diff_text(old) == ""


def test_a_skill_folder_with_too_many_files_is_refused(tmp_path):
    root = tmp_path / "lib"
    SkillLibrary([parse_skill_md(HEAT)]).save(root)
    for i in range(70):
        (root / "heat-then-place" / f"note{i}.md").write_text("x")
    with pytest.raises(LibraryError, match="expected at most 64 resource files, got 70"):
        SkillLibrary.load(root)
    for i in range(300):
        (root / "heat-then-place" / f"more{i}.md").write_text("x")
    with pytest.raises(LibraryError, match="got more than 256 entries"):
        SkillLibrary.load(root)


resource_paths = st.from_regex(r"(references|assets|tests)/[a-z0-9_]{1,8}\.(md|txt|py)", fullmatch=True)


@settings(max_examples=30)  # each example saves twice (fsync per file)
@given(bodies=st.lists(st.text(max_size=80).map(lambda s: s.replace("\r", "")), min_size=0, max_size=4),
       resources=st.dictionaries(resource_paths, st.text(max_size=40), max_size=3))
def test_any_library_round_trips_through_disk_byte_identically(bodies, resources):
    import tempfile

    lib = SkillLibrary(Skill(f"skill-{i}", f"Skill number {i}.", body=body, resources=resources if i == 0 else {})
                       for i, body in enumerate(bodies))
    with tempfile.TemporaryDirectory() as tmp:
        lib.save(Path(tmp) / "a")
        loaded = SkillLibrary.load(Path(tmp) / "a")
        loaded.save(Path(tmp) / "b")
        assert loaded == lib and loaded.version == lib.version and not lib.diff(loaded)
        assert tree_bytes(Path(tmp) / "a") == tree_bytes(Path(tmp) / "b")
        if bodies:
            assert library_module.load_skill(Path(tmp) / "a" / "skill-0") == lib.get("skill-0")
