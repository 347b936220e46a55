"""`Dialogue`: what a scenario script writes against. It owns the random source, the date the
call happens on, and the message list, and checks every tool call against the tool's schema as
it is written, so a broken scenario fails at generation time, not in a benchmark."""

from __future__ import annotations

import json
import random
import re
from datetime import date, timedelta
from typing import Any

from turnspec.tools_grammar.schema import validate_arguments
from turnspec.workloads import spoken
from turnspec.workloads.catalog import Domain
from turnspec.workloads.paraphrase import vary
from turnspec.workloads.spoken import Said

FIRST_NAMES = ("Maria", "James", "Priya", "Wei", "Fatima", "Carlos", "Emily", "Kwame", "Olivia", "Noah",
               "Aisha", "Liam", "Sofia", "Mateo", "Hannah", "Yuki", "Daniel", "Grace", "Omar", "Zoe")
LAST_NAMES = ("Garcia", "Smith", "Patel", "Chen", "Okafor", "Nguyen", "Johnson", "Rossi", "Kim", "Brown",
              "Novak", "Silva", "Cohen", "Haddad", "Larsen", "Murphy", "Tanaka", "Lopez", "Walker", "Ali")
STREETS = ("Oak Street", "Maple Avenue", "Elm Drive", "Harbor Road", "Pine Lane", "Cedar Court",
           "Lincoln Avenue", "Sunset Boulevard", "River Road", "Hillside Drive")
CITIES = ("Springfield", "Riverside", "Fairview", "Greenville", "Madison", "Franklin", "Clinton", "Salem")
_SPACES = re.compile(r"\s+")
_CALL_ID_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


def days_after(iso: str, days: int) -> str:
    """The ISO date `days` after `iso` (before it for negative days)."""
    return (date.fromisoformat(iso) + timedelta(days=days)).isoformat()


def minutes_after(hhmm: str, minutes: int) -> str:
    """The "HH:MM" time `minutes` after `hhmm` (before it for negative minutes; wraps at midnight)."""
    total = (int(hhmm[:2]) * 60 + int(hhmm[3:]) + minutes) % (24 * 60)
    return f"{total // 60:02d}:{total % 60:02d}"


class Dialogue:
    """One conversation being written. Helpers return `Said` values (tool value + spoken words)."""

    def __init__(self, rng: random.Random, dom: Domain, today: date, business: str, agent: str) -> None:
        self.rng = rng
        self.domain = dom
        self.today = today
        self.business = business
        self.agent = agent
        self.messages: list[dict] = []

    # -- things callers say -----------------------------------------------------------------

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def pick(self, *options: Any) -> Any:
        return self.rng.choice(options)

    def count(self, low: int, high: int, unit: str = "") -> Said:
        return spoken.count(self.rng, low, high, unit)

    def clock(self, first_hour: int, last_hour: int) -> Said:
        return spoken.clock(self.rng, first_hour, last_hour)

    def day(self, within: int = 21) -> Said:
        return spoken.day(self.rng, self.today, within)

    def days_ago(self, days: int) -> str:
        """The ISO date `days` before the call's date (a past order, payment or charge)."""
        return (self.today - timedelta(days=days)).isoformat()

    def money(self, low: int, high: int, cents: bool = True) -> Said:
        return spoken.money(self.rng, low, high, cents)

    def digits(self, length: int) -> Said:
        return spoken.digits(self.rng, length)

    def code(self, length: int = 6) -> Said:
        value = spoken.code(self.rng, length)
        return Said(value, spoken.spell(value))

    def person(self) -> Said:
        first, last = self.rng.choice(FIRST_NAMES), self.rng.choice(LAST_NAMES)
        return Said(f"{first} {last}", f"{first} {last}")

    def last_name(self) -> Said:
        last = self.rng.choice(LAST_NAMES)
        spelled = f"{last}, {' '.join(last.upper())}" if self.chance(0.3) else last
        return Said(last, spelled)

    def address(self) -> Said:
        number = self.rng.randint(10, 9999)
        street = self.rng.choice(STREETS)
        return Said(f"{number} {street}", f"{spoken.house_number(number)} {street}")

    def birthday(self) -> Said:
        when = date(self.rng.randint(1940, 2006), self.rng.randint(1, 12), self.rng.randint(1, 28))
        return Said(when.isoformat(), f"{spoken.spoken_date(when.isoformat())} {spoken.year(when.year)}".lower())

    def fix(self, right: Said, wrong: Said, p: float = 0.25) -> str:
        """The caller may say the wrong value first and correct it ("no wait, make that ...")."""
        return spoken.corrected(self.rng, right, wrong, p)

    # -- turns ----------------------------------------------------------------------------------

    def user(self, *variants: str, filler: float = 0.5) -> None:
        """One caller turn: a random variant, maybe with an opening filler."""
        text = _SPACES.sub(" ", self.rng.choice(variants)).strip()
        first = not text.startswith(("hi", "hey", "hello")) and not any(m["role"] == "user" for m in self.messages)
        self.messages.append({"role": "user", "content": spoken.filler(self.rng, filler, first) + text})

    def say(self, *variants: str) -> None:
        """One spoken assistant turn (no tool call): a random variant, paraphrased (`vary`) so
        the scripted sentences rarely recur exactly across calls."""
        text = vary(self.rng, _SPACES.sub(" ", self.rng.choice(variants)).strip())
        self.messages.append({"role": "assistant", "content": text})

    def call(self, name: str, arguments: dict, result: dict) -> dict:
        """An assistant tool call and the tool's result; returns the result for the reply."""
        spec = self.domain.specs.get(name)
        if spec is None:
            raise ValueError(f"{self.domain.name}: no tool named {name!r} (have: {', '.join(self.domain.specs)})")
        validate_arguments(spec, arguments)
        call_id = "call_" + "".join(self.rng.choice(_CALL_ID_CHARS) for _ in range(12))
        arguments_json = json.dumps(arguments, separators=(",", ":"), ensure_ascii=False)
        self.messages.append({
            "role": "assistant", "content": None,
            "tool_calls": [{"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments_json}}],
        })
        self.messages.append({"role": "tool", "tool_call_id": call_id,
                              "content": json.dumps(result, separators=(",", ":"), ensure_ascii=False)})
        return result

    # -- the reply side's spoken forms ------------------------------------------------------------

    @staticmethod
    def date_words(iso: str) -> str:
        return spoken.spoken_date(iso)

    @staticmethod
    def time_words(hhmm: str) -> str:
        return spoken.spoken_time(hhmm)

    @staticmethod
    def money_words(value: float) -> str:
        return spoken.spoken_money(value)

    @staticmethod
    def words(n: int) -> str:
        return spoken.words(n)

    @staticmethod
    def spell(text: str) -> str:
        return spoken.spell(text)
