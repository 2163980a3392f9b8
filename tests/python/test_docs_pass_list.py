"""The pass lists of docs/design/*.md name the passes src/transform/pipeline.cpp runs.

The format in a design doc: a line holding only the marker

    <!-- pass-list: TARGET -->

(TARGET is cpu, cuda or metal: a `lower_for_<target>` function of pipeline.cpp),
directly followed by a fenced code block. Each non-empty line of the block starts with
a pass name, the first argument of a `run_pass("name", ...)` call; the rest of the line
(after whitespace) is free text for the reader. The block lists the whole order that
`lower()` runs for that target: its own `run_pass` steps, with the `lower_for_<target>`
it dispatches to expanded in place, and `lower_common` expanded where a target function
calls it. Passes behind a pass config are listed where they would run.

The test reads pipeline.cpp as text (no compilation): every `PrimFunc lower...(` function
body, in order, for `run_pass("...")` and for calls of the other lowering functions.
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PIPELINE = ROOT / "src" / "transform" / "pipeline.cpp"
DESIGN = ROOT / "docs" / "design"

# The doc that must carry each target's list (others may carry more copies).
REQUIRED = {"cpu": "foundation.md", "cuda": "cuda_lowering.md", "metal": "metal.md"}

MARKER = re.compile(r"^<!-- pass-list: (\w+) -->\n```[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
FUNCTION = re.compile(r"^PrimFunc (lower\w*)\([^)]*\)\s*\{\n(.*?)^\}", re.MULTILINE | re.DOTALL)
STEP = re.compile(r'\brun_pass\(\s*"(\w+)"|\b(lower_common|lower_for_\w+)\(')


def lowering_functions(source):
    """{name: body} of the `PrimFunc lower...(...)` functions of pipeline.cpp."""
    return {m.group(1): m.group(2) for m in FUNCTION.finditer(source)}


def passes_for(target, functions, name="lower"):
    """The passes `name` runs for `target`, calls of other lowering functions expanded."""
    order = []
    for m in STEP.finditer(functions[name]):
        if m.group(1):
            order.append(m.group(1))
            continue
        callee = m.group(2)
        if callee.startswith("lower_for_") and callee != f"lower_for_{target}":
            continue  # another target's branch of lower()'s switch
        order.extend(passes_for(target, functions, callee))
    return order


def doc_lists():
    """(doc name, target, [pass names]) for every marked list in docs/design."""
    found = []
    for doc in sorted(DESIGN.glob("*.md")):
        for m in MARKER.finditer(doc.read_text()):
            names = [line.split()[0] for line in m.group(2).splitlines() if line.strip()]
            found.append((doc.name, m.group(1), names))
    return found


SOURCE = PIPELINE.read_text()
FUNCTIONS = lowering_functions(SOURCE)
TARGETS = sorted(name[len("lower_for_") :] for name in FUNCTIONS if name.startswith("lower_for_"))
LISTS = doc_lists()


def test_the_parser_sees_every_pass_of_pipeline_cpp():
    # A pass run from a function this parser does not expand would be missing from
    # every expected list without this check.
    assert {"lower", "lower_common"} <= set(FUNCTIONS)
    assert sorted(REQUIRED) == TARGETS
    reached = {p for t in TARGETS for p in passes_for(t, FUNCTIONS)}
    assert reached == set(re.findall(r'\brun_pass\(\s*"(\w+)"', SOURCE))


def test_every_target_has_its_list_in_its_design_doc():
    listed = {(doc, target) for doc, target, _ in LISTS}
    for target, doc in REQUIRED.items():
        assert (doc, target) in listed, (
            f"docs/design/{doc} has no '<!-- pass-list: {target} -->' list"
        )


@pytest.mark.parametrize("doc,target,names", LISTS, ids=[f"{d}:{t}" for d, t, _ in LISTS])
def test_doc_pass_list_matches_pipeline_cpp(doc, target, names):
    assert target in TARGETS, (
        f"docs/design/{doc}: unknown target '{target}' (pipeline.cpp has {TARGETS})"
    )
    expected = passes_for(target, FUNCTIONS)
    assert names == expected, (
        f"docs/design/{doc}'s {target} pass list differs from src/transform/pipeline.cpp:\n"
        f"  doc:      {names}\n  pipeline: {expected}"
    )


def test_a_changed_order_is_caught():
    # The check itself: two passes swapped in lower_for_cuda change the cuda list.
    body = FUNCTIONS["lower_for_cuda"]
    swapped = body.replace('"plan_barriers"', '"PLACEHOLDER"').replace(
        '"warp_specialize"', '"plan_barriers"'
    )
    functions = {
        **FUNCTIONS,
        "lower_for_cuda": swapped.replace('"PLACEHOLDER"', '"warp_specialize"'),
    }
    cuda = passes_for("cuda", functions)
    assert cuda.index("warp_specialize") < cuda.index("plan_barriers")
    assert passes_for("cuda", FUNCTIONS) != cuda
