"""Chapter 14's exercise checks: the solutions pass, the stubs and plausible slips do not."""

from __future__ import annotations

import re
from typing import Any

from harness.exercises import ch14
from harness.exercises.ch14_cases import expected_names, generated_servers, name_cases
from harness.exercises.ch14_search import (
    POOL,
    generated_searches,
    reference_search,
    search_cases,
)
from tests.mutation import assert_exercise_caught
from tests.solutions import load

solutions = load("ch14")


def stub(*args: object) -> None:
    raise NotImplementedError


def names_of(servers: dict[str, list[str]]) -> tuple[list[str], list[tuple[str, str]]]:
    """The solution, typed: what the slips below start from."""
    out: tuple[list[str], list[tuple[str, str]]] = solutions.mcp_tool_names(servers)
    return out


def search(query: str, tools: list[dict[str, str]], max_results: int = 5) -> list[str]:
    """The solution, typed."""
    out: list[str] = solutions.search_tools(query, tools, max_results)
    return out


def test_the_solutions_pass() -> None:
    assert ch14.check_mcp_tool_names(solutions.mcp_tool_names)
    assert ch14.check_search_tools(solutions.search_tools)


def test_the_stubs_are_told_not_yet_with_a_hint() -> None:
    for verdict in (ch14.check_mcp_tool_names(stub), ch14.check_search_tools(stub)):
        assert not verdict
        assert str(verdict).startswith("not yet: ")
        assert "stub" in str(verdict) and "\nhint: " in str(verdict)


def test_the_stubs_hear_the_first_case_and_where_the_recipe_is() -> None:
    verdicts = (ch14.check_mcp_tool_names(stub), ch14.check_search_tools(stub))
    for n, verdict in enumerate(verdicts, start=1):
        assert "first case: " in str(verdict)
        assert f"stuck? ch14.hint({n}) shows one way" in str(verdict)


EQUIVALENT_NAMES: dict[str, str] = {}  # mutants of mcp_tool_names that behave like it, and why

EQUIVALENT_SEARCH: dict[str, str] = {
    "line 38: `0` → `-1`": (
        "starting every score at -1 instead of 0: a score is a sum of 12, 6 and 2, so a tool "
        "that matched still scores above 0, one that did not stays out, and the order of the "
        "scores is the same"
    ),
    "line 46: `0` → `1`": ("`score > 1` for `score > 0`: a score is a sum of 12, 6 and 2, never 1"),
}


def test_every_mutant_of_the_naming_solution_is_caught() -> None:
    assert_exercise_caught("ch14", 1, EQUIVALENT_NAMES)


def test_every_mutant_of_the_search_solution_is_caught() -> None:
    assert_exercise_caught("ch14", 2, EQUIVALENT_SEARCH)


# -- the cases themselves ------------------------------------------------------------------------


def test_the_first_case_is_the_one_the_stub_hears() -> None:
    _, servers, want = name_cases()[0]
    assert servers == {"time": ["get_current_time", "convert_time"]} and not want[1]
    assert str(want[0]).replace("'", '"') in str(ch14.check_mcp_tool_names(stub)).replace(
        "\n    ", " "
    )
    _, query, tools, limit, found = search_cases()[0]
    assert (query, tools, limit, found) == (
        "select:mcp__git__git_status",
        POOL,
        None,
        ["mcp__git__git_status"],
    )


def test_the_naming_cases_agree_with_the_packages_naming() -> None:
    """The package's naming (harness.mcp.names, the API's pattern, the first keeps a name)."""
    for what, servers, want in name_cases():
        assert expected_names(servers) == want, what


def test_the_names_given_are_the_ones_claude_codes_cleaning_leaves_alone() -> None:
    """The session cleans a listed name (sanitize_unicode) before naming it; the generated names
    are already clean, so the package's answer is the session's."""
    from harness.mcp.schema import sanitize_unicode

    for servers in generated_servers():
        for server, tools in servers.items():
            assert sanitize_unicode(server) == server
            assert all(sanitize_unicode(tool) == tool for tool in tools)


def test_the_naming_cases_cover_every_way_to_be_left_out() -> None:
    cases = name_cases()
    left_out = [what for what, _, (_, dropped) in cases if dropped]
    assert any("empty" in what for what in left_out)
    assert any("129" in what for what in left_out)
    assert any("twice" in what for what in left_out)
    assert any("normalize alike" in what for what in left_out)
    assert len({what for what, *_ in cases}) == len(cases)
    generated = generated_servers()
    assert sum(bool(expected_names(s)[1]) for s in generated) >= len(generated) // 4


def test_the_reference_search_is_the_packages_search_on_every_case() -> None:
    """The exercise's rules are harness.mcp.search's for deferred MCP tools, without +term or
    a query that starts with mcp__ (a name, or a server's prefix: none of the cases has one)."""
    from harness.mcp.search import deferred, search_names

    runs = [(q, t, m) for _, q, t, m, _ in search_cases()] + generated_searches()
    for query, tools, limit in runs:
        pool = [deferred(tool) for tool in tools]
        package = search_names(query, pool, max_results=5 if limit is None else limit)
        assert reference_search(query, tools, 5 if limit is None else limit) == package, query
    for what, query, tools, limit, want in search_cases():
        assert "+" not in query and not query.lower().strip().startswith("mcp__"), what
        assert reference_search(query, tools, 5 if limit is None else limit) == want, what


def test_the_generated_searches_stay_inside_the_exercise() -> None:
    """No +term and no query starting with mcp__ (left out), unique MCP names, and both query
    forms with and without results."""
    forms: set[tuple[str, bool]] = set()
    for query, tools, limit in generated_searches():
        assert "+" not in query and query.isascii()
        assert not query.lower().strip().startswith("mcp__")
        names = [tool["name"] for tool in tools]
        assert len(set(names)) == len(names) and all(n.startswith("mcp__") for n in names)
        form = "select" if query.lower().startswith("select:") else "other"
        found = reference_search(query, tools, 5 if limit is None else limit)
        forms.add((form, bool(found)))
    assert forms == {("select", True), ("select", False), ("other", True), ("other", False)}


def test_calling_the_packages_naming_is_refused() -> None:
    from harness.mcp.names import mcp_tool_name

    def shortcut(servers: dict[str, list[str]]) -> tuple[list[str], list[tuple[str, str]]]:
        names: list[str] = []
        dropped: list[tuple[str, str]] = []
        for server, tools in servers.items():
            for tool in tools:
                name = mcp_tool_name(server, tool)
                if tool and len(name) <= 128 and name not in names:
                    names.append(name)
                else:
                    dropped.append((server, tool))
        return names, dropped

    verdict = ch14.check_mcp_tool_names(shortcut)
    assert not verdict and "mcp_tool_name" in str(verdict)


def test_calling_the_packages_naming_through_its_module_is_refused() -> None:
    from harness.mcp import names as module

    def shortcut(servers: dict[str, list[str]]) -> tuple[list[str], list[tuple[str, str]]]:
        return [module.mcp_tool_name(s, t) for s, tools in servers.items() for t in tools], []

    verdict = ch14.check_mcp_tool_names(shortcut)
    assert not verdict and "build the names yourself" in str(verdict)


def test_calling_the_packages_search_is_refused() -> None:
    from harness.mcp import search as module

    def shortcut(query: str, tools: list[dict[str, Any]], max_results: int = 5) -> list[str]:
        pool = [module.deferred(tool) for tool in tools]
        return module.search_names(query, pool, max_results=max_results)

    verdict = ch14.check_search_tools(shortcut)
    assert not verdict and "search_names" in str(verdict)


def test_the_hints_and_first_cases_show_no_answer() -> None:
    """The hint says where to look; the recipe comes only from hint(n)."""
    for verdict, recipe in (
        (ch14.check_mcp_tool_names(stub), ch14.hint(1).text),
        (ch14.check_search_tools(stub), ch14.hint(2).text),
    ):
        text = str(verdict)
        assert "re.sub" not in text and "0xFFFF" not in text and "re.escape" not in text
        assert not any(len(s) > 30 and s in text for s in re.split(r"(?<=[.;:])\s+", recipe))


# -- exercise 1: name a server's tools ----------------------------------------------------------


def _renamed(normalize: Any) -> Any:
    """The solution with its normalizing swapped for ``normalize``."""

    def slip(servers: dict[str, list[str]]) -> tuple[list[str], list[tuple[str, str]]]:
        names: list[str] = []
        dropped: list[tuple[str, str]] = []
        for server, tools in servers.items():
            for tool in tools:
                name = f"mcp__{normalize(server)}__{normalize(tool)}"
                if not tool or len(name) > 128 or name in names:
                    dropped.append((server, tool))
                else:
                    names.append(name)
        return names, dropped

    return slip


def test_keeping_every_letter_and_digit_python_knows_is_rejected() -> None:
    """str.isalnum() and \\w say yes to é, 日 and ٣: the API does not."""
    slip = _renamed(lambda part: "".join(c if c.isalnum() or c in "_-" else "_" for c in part))
    verdict = ch14.check_mcp_tool_names(slip)
    assert not verdict and "accented letters" in str(verdict)
    slip = _renamed(lambda part: re.sub(r"[^\w-]", "_", part))
    assert not ch14.check_mcp_tool_names(slip)


def test_an_emoji_made_one_underscore_is_rejected() -> None:
    verdict = ch14.check_mcp_tool_names(_renamed(lambda p: re.sub(r"[^a-zA-Z0-9_-]", "_", p)))
    assert not verdict and "emoji" in str(verdict) and "two underscores" in str(verdict)


def test_lower_casing_the_names_is_rejected() -> None:
    def slip(servers: dict[str, list[str]]) -> tuple[list[str], list[tuple[str, str]]]:
        return names_of({s.lower(): [t.lower() for t in tools] for s, tools in servers.items()})

    verdict = ch14.check_mcp_tool_names(slip)
    assert not verdict and "upper case kept" in str(verdict)


def test_counting_the_limit_off_by_one_is_rejected() -> None:
    def slip(servers: dict[str, list[str]]) -> tuple[list[str], list[tuple[str, str]]]:
        names, dropped = names_of(servers)
        long = [n for n in names if len(n) == 128]
        pairs = [(s, t) for s, tools in servers.items() for t in tools if len(t) == 120]
        return [n for n in names if n not in long], dropped + pairs

    verdict = ch14.check_mcp_tool_names(slip)
    assert not verdict and "exactly 128" in str(verdict)


def test_keeping_the_last_of_two_alike_names_is_rejected() -> None:
    def slip(servers: dict[str, list[str]]) -> tuple[list[str], list[tuple[str, str]]]:
        backwards = {s: tools[::-1] for s, tools in reversed(list(servers.items()))}
        names, dropped = names_of(backwards)
        return names[::-1], dropped[::-1]

    assert not ch14.check_mcp_tool_names(slip)


def test_dropping_every_tool_of_a_collision_is_rejected() -> None:
    def slip(servers: dict[str, list[str]]) -> tuple[list[str], list[tuple[str, str]]]:
        names, dropped = names_of(servers)
        taken = {f"mcp__{s}__{t}" for s, t in dropped}
        return [n for n in names if n not in taken], dropped

    assert not ch14.check_mcp_tool_names(slip)


def test_keeping_an_empty_tool_name_is_rejected() -> None:
    def slip(servers: dict[str, list[str]]) -> tuple[list[str], list[tuple[str, str]]]:
        names, dropped = names_of({s: [t or "_empty_" for t in ts] for s, ts in servers.items()})
        return [n.replace("_empty_", "") for n in names], dropped

    verdict = ch14.check_mcp_tool_names(slip)
    assert not verdict and "empty name" in str(verdict)


def test_reporting_the_full_names_instead_of_the_pairs_is_rejected() -> None:
    def slip(servers: dict[str, list[str]]) -> tuple[list[str], list[str]]:
        names, dropped = names_of(servers)
        return names, [f"mcp__{s}__{t}" for s, t in dropped]

    verdict = ch14.check_mcp_tool_names(slip)
    assert not verdict and "(server, tool) pairs" in str(verdict)


def test_a_list_for_a_pair_is_accepted() -> None:
    def lists(servers: dict[str, list[str]]) -> list[list[Any]]:
        names, dropped = names_of(servers)
        return [names, [list(pair) for pair in dropped]]

    assert ch14.check_mcp_tool_names(lists)


def test_strange_namings_come_back_as_not_yet() -> None:
    odds: list[Any] = [None, "mcp__time__x", ([], None), (["a"],), ({"a"}, []), ([1], [])]
    for odd in odds:

        def answering(servers: Any, odd: Any = odd) -> Any:
            return odd

        verdict = ch14.check_mcp_tool_names(answering)
        assert not verdict and "return (names, dropped)" in str(verdict)


# -- exercise 2: search the deferred tools ------------------------------------------------------


def test_a_term_used_as_a_regular_expression_is_rejected() -> None:
    def slip(query: str, tools: list[dict[str, str]], max_results: int = 5) -> list[str]:
        if "." in query or "(" in query:
            words = query.lower().split()
            hits = [
                t["name"]
                for t in tools
                if any(re.search(rf"\b{w}\b", t["description"].lower()) for w in words)
            ]
            return hits[:max_results]
        return search(query, tools, max_results)

    verdict = ch14.check_search_tools(slip)
    assert not verdict and "a dot in a term" in str(verdict)


def test_a_description_word_found_inside_another_is_rejected() -> None:
    def slip(query: str, tools: list[dict[str, str]], max_results: int = 5) -> list[str]:
        if query == "stag":
            return [t["name"] for t in tools if "stag" in t["name"] + t["description"].lower()]
        return search(query, tools, max_results)

    verdict = ch14.check_search_tools(slip)
    assert not verdict and "must be whole" in str(verdict)


def test_ties_broken_by_name_instead_of_by_order_are_rejected() -> None:
    def slip(query: str, tools: list[dict[str, str]], max_results: int = 5) -> list[str]:
        return search(query, sorted(tools, key=lambda t: t["name"]), max_results)

    assert not ch14.check_search_tools(slip)


def test_names_in_select_compared_in_any_case_are_rejected() -> None:
    def slip(query: str, tools: list[dict[str, str]], max_results: int = 5) -> list[str]:
        if query.lower().startswith("select:"):
            query = query.lower()
            tools = [{**t, "name": t["name"].lower()} for t in tools]
        return search(query, tools, max_results)

    verdict = ch14.check_search_tools(slip)
    assert not verdict and "names are exact" in str(verdict)


def test_max_results_applied_to_select_is_rejected() -> None:
    def slip(query: str, tools: list[dict[str, str]], max_results: int = 5) -> list[str]:
        return search(query, tools, max_results)[:max_results]

    verdict = ch14.check_search_tools(slip)
    assert not verdict and "does not apply" in str(verdict)


def test_a_server_name_counted_for_each_of_its_parts_is_rejected() -> None:
    def slip(query: str, tools: list[dict[str, str]], max_results: int = 5) -> list[str]:
        terms = query.lower().split()
        if query.lower().startswith("select:") or not terms:
            return search(query, tools, max_results)

        def score(tool: dict[str, str]) -> int:
            parts = [p for p in tool["name"][5:].lower().split("_") if p]
            total = 0
            for term in terms:
                total += 12 * parts.count(term) or (6 if any(term in p for p in parts) else 0)
                words = tool["description"].lower()
                total += 2 if re.search(rf"\b{re.escape(term)}\b", words) else 0
            return total

        scored = sorted(((score(t), i) for i, t in enumerate(tools)), key=lambda s: -s[0])
        return [tools[i]["name"] for s, i in scored if s > 0][:max_results]

    assert not ch14.check_search_tools(slip)


def test_a_repeated_term_counted_once_is_rejected() -> None:
    def slip(query: str, tools: list[dict[str, str]], max_results: int = 5) -> list[str]:
        if query.lower().startswith("select:"):
            return search(query, tools, max_results)
        return search(" ".join(dict.fromkeys(query.split())), tools, max_results)

    verdict = ch14.check_search_tools(slip)
    assert not verdict and "repeated" in str(verdict)


def test_a_default_other_than_five_is_rejected() -> None:
    def slip(query: str, tools: list[dict[str, str]], max_results: int = 6) -> list[str]:
        return search(query, tools, max_results)

    verdict = ch14.check_search_tools(slip)
    assert not verdict and "should be" in str(verdict)


def test_changing_the_tools_given_does_not_fool_the_check() -> None:
    def slip(query: str, tools: list[dict[str, str]], max_results: int = 5) -> list[str]:
        found = search(query, tools, max_results)
        tools.clear()
        return found

    assert ch14.check_search_tools(slip)


def test_strange_search_results_come_back_as_not_yet() -> None:
    odds: list[Any] = [None, "mcp__git__git_status", ("mcp__git__git_status",), [None], {"a"}]
    for odd in odds:

        def answering(query: str, tools: Any, max_results: int = 5, odd: Any = odd) -> Any:
            return odd

        verdict = ch14.check_search_tools(answering)
        assert not verdict and "a list of str" in str(verdict)


def test_the_chapter_states_how_many_cases_each_check_tries() -> None:
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "chapters/14_mcp.ipynb"
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    text = " ".join(" ".join("".join(c["source"]).split()) for c in cells)
    assert f"The check tries {len(name_cases())} tool lists" in text
    assert f"then {len(generated_servers())} generated ones" in text
    assert f"The check tries {len(search_cases())} queries" in text
    assert f"then {len(generated_searches())} generated ones" in text
