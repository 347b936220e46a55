"""Spoken forms: numbers, times, dates, money and digit strings read the way callers say them."""

from __future__ import annotations

import random
import re
from datetime import date

import pytest

from turnspec.workloads import spoken

_UNITS = {w: i for i, w in enumerate(["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"])}


@pytest.mark.parametrize(
    ("n", "text"),
    [(0, "zero"), (13, "thirteen"), (40, "forty"), (42, "forty two"), (100, "one hundred"),
     (305, "three hundred five"), (1000, "one thousand"), (9999, "nine thousand nine hundred ninety nine")],
)
def test_words(n: int, text: str) -> None:
    assert spoken.words(n) == text


def test_ordinals_years_house_numbers() -> None:
    assert [spoken.ordinal(n) for n in (1, 2, 3, 5, 12, 20, 21, 30, 31)] == [
        "first", "second", "third", "fifth", "twelfth", "twentieth", "twenty first", "thirtieth", "thirty first"]
    assert [spoken.year(y) for y in (1987, 2005, 2010)] == ["nineteen eighty seven", "two thousand five", "twenty ten"]
    assert [spoken.house_number(n) for n in (3886, 412, 1005, 25)] == ["thirty eight eighty six", "four twelve", "one thousand five", "twenty five"]
    assert spoken.spoken_time("19:05") == "seven oh five pm" and spoken.spoken_time("12:00") == "twelve pm"
    assert spoken.spoken_date("2026-12-05") == "December fifth"
    assert spoken.spoken_money(42.5) == "forty two dollars and fifty cents"
    with pytest.raises(ValueError, match="expected 0 <= n < 10000"):
        spoken.words(10_000)


def test_values_are_canonical_and_in_range() -> None:
    rng, today = random.Random(7), date(2026, 11, 30)
    for _ in range(300):
        t = spoken.clock(rng, 17, 21)
        assert re.fullmatch(r"(1[7-9]|2[01]):(00|15|30|45)", t.value), t
        d = spoken.day(rng, today, 14)
        assert 0 <= (date.fromisoformat(d.value) - today).days <= 14
        m = spoken.money(rng, 5, 80)
        assert 5 <= m.value < 81 and round(m.value, 2) == m.value
        c = spoken.count(rng, 1, 8, "people")
        assert 1 <= c.value <= 8 and c.spoken


def test_digit_strings_read_back_to_their_value() -> None:
    rng = random.Random(3)
    for _ in range(200):
        said = spoken.digits(rng, 10)
        out, tokens = [], said.spoken.split()
        i = 0
        while i < len(tokens):
            if tokens[i] == "double":
                out += [str(_UNITS[tokens[i + 1]])] * 2
                i += 2
            else:
                out.append("0" if tokens[i] == "oh" else str(_UNITS[tokens[i]]))
                i += 1
        assert "".join(out) == said.value


def test_corrections_and_fillers() -> None:
    rng = random.Random(1)
    right, wrong = spoken.Said(4, "four people"), spoken.Said(3, "three people")
    said = spoken.corrected(rng, right, wrong, p=1.0)
    assert said.startswith("three people") and said.endswith("four people")
    assert spoken.corrected(rng, right, wrong, p=0.0) == "four people"
    assert all(spoken.filler(rng, 1.0) in spoken.FILLERS for _ in range(50))
