"""Permission rules that name MCP tools, as Claude Code's permissions page documents them
(code.claude.com/docs/en/permissions): a whole server, a server's wildcard, tool-name globs."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.tools.permissions import Permissions, Rule

NAME = st.text(alphabet="abcdefghij_-", min_size=1, max_size=12).filter(lambda s: "__" not in s)


@pytest.mark.parametrize(
    ("rule", "tool", "named"),
    [
        ("mcp__puppeteer", "mcp__puppeteer__puppeteer_navigate", True),
        ("mcp__puppeteer__*", "mcp__puppeteer__puppeteer_navigate", True),
        ("mcp__puppeteer__puppeteer_navigate", "mcp__puppeteer__puppeteer_navigate", True),
        ("mcp__puppeteer__puppeteer_navigate", "mcp__puppeteer__click", False),
        ("mcp__puppeteer", "mcp__puppeteers__x", False),
        ("mcp__github__get_*", "mcp__github__get_issue", True),
        ("mcp__github__get_*", "mcp__github__list_issues", False),
        ("mcp__*", "mcp__any__tool", True),
        ("mcp__*", "bash", False),
        ("*", "bash", True),
        ("bash", "mcp__bash__x", False),
    ],
)
def test_a_rule_names_the_tools_the_docs_say_it_does(rule: str, tool: str, named: bool) -> None:
    assert Rule.parse(rule).matches(tool, None) is named


@given(server=NAME, tool=NAME, other=NAME)
def test_a_server_rule_names_exactly_that_servers_tools(server: str, tool: str, other: str) -> None:
    rule = Rule.parse(f"mcp__{server}")
    assert rule.matches(f"mcp__{server}__{tool}", None)
    assert rule.matches(f"mcp__{other}__{tool}", None) is (other == server)


@pytest.mark.parametrize("rule", ["*", "mcp__*", "B*", "mcp__gi*__x"])
def test_an_allow_rule_with_an_unanchored_glob_is_refused(rule: str) -> None:
    with pytest.raises(ValueError, match="only after mcp__<server>__"):
        Permissions.from_rules(allow=[rule])


def test_deny_and_ask_rules_may_use_any_glob_and_deny_wins() -> None:
    permissions = Permissions.from_rules(
        allow=["mcp__github__*"], ask=["mcp__github__delete_*"], deny=["mcp__*"]
    )
    decision, reason = permissions.decide("mcp__github__get_issue", {}, read_only=False)
    assert (decision, reason) == ("deny", "deny rule mcp__*")
    only_ask = Permissions.from_rules(allow=["mcp__github__*"], ask=["mcp__github__delete_*"])
    assert only_ask.decide("mcp__github__delete_repo", {}, read_only=False)[0] == "ask"
    assert only_ask.decide("mcp__github__get_issue", {}, read_only=False)[0] == "allow"
