"""The demo company every emulator serves with ``--company``: its people, Slack conversations and
message timing, Confluence spaces and page ids. One definition, so Jira issues link real Confluence
pages and Slack messages, and those mention Jira keys back (issue 6).
"""

from __future__ import annotations

# Slack: the first generated message's time (epoch seconds); people (first and last names).
T0 = 1_700_000_000
FIRST = [
    "Alice",
    "Bob",
    "Carol",
    "Dmitri",
    "Eva",
    "Farid",
    "Grace",
    "Hiro",
    "Ines",
    "Jonas",
    "Kate",
    "Liam",
    "Maya",
    "Nadia",
    "Oscar",
    "Priya",
    "Quentin",
    "Rosa",
    "Sven",
    "Tara",
]
LAST = [
    "Ng",
    "Ivanova",
    "Smith",
    "Okafor",
    "Larsen",
    "Haddad",
    "Moreau",
    "Tanaka",
    "Silva",
    "Berg",
    "Novak",
    "Reyes",
    "Kim",
    "Petrov",
    "Ali",
    "Shah",
    "Dubois",
    "Costa",
    "Lund",
    "Rao",
]
# (id, name, kind, members by person index; None = everyone)
CHANNELS: tuple[tuple[str, str, str, tuple[int, ...] | None], ...] = (
    ("C0GENERAL", "general", "public", None),
    ("C0ENGINEER", "engineering", "public", tuple(range(10))),
    ("C0INCIDENT", "incidents", "public", (0, 1, 2, 3, 4, 13)),
    ("C0RANDOM", "random", "public", None),
    ("G0LEADERS", "leadership", "private", (0, 10, 13)),
    ("G0HRTEAM", "hr-team", "private", (10, 11, 12)),
    ("D0DM00001", "", "im", (0, 1)),
)
# Confluence: the first generated page's id; spaces (key, name).
FIRST_ID = 100000
SPACES = (
    ("ENG", "Engineering"),
    ("OPS", "Operations"),
    ("HR", "People"),
    ("PRD", "Product"),
)


def person(k: int, domain: str) -> tuple[str, str, str]:
    """The demo company's k-th person: first, last, e-mail (shared with the Confluence emulator)."""
    k %= 20
    first, last = FIRST[k], LAST[(k * 7) % 20]
    return first, last, f"{first.lower()}.{last.lower()}@{domain}"


def step_for(n: int) -> int:
    return 600 if n <= 50_000 else max(1, 35_000_000 // n)


def ts_of(k: int, n: int = 40) -> str:
    return f"{T0 + step_for(n) * k}.000100"


def demo_message_url(company: str, k: int) -> str:
    """Permalink of generated message ``k`` (for emulators of other sources that link to Slack)."""
    channel = CHANNELS[k % len(CHANNELS)][0]
    return f"https://{company}.slack.com/archives/{channel}/p{ts_of(k).replace('.', '')}"
