"""How callers say things on the phone: numbers as words, times, dates, money, digit strings,
fillers and self-corrections. Every helper returns a `Said(value, spoken)`: the canonical value
a tool receives and the words a speech-to-text transcript would contain."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

_ONES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"]
_TENS = ["_", "_", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_ORDINALS = {1: "first", 2: "second", 3: "third", 5: "fifth", 8: "eighth", 9: "ninth", 12: "twelfth"}
_WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december"]

FILLERS = ("um, ", "uh, ", "so ", "yeah, ", "okay so ", "oh, ", "")
GREETINGS = ("hi, ", "hey, ", "hello, ", "um, hi, ", "yeah hi, ", "hi there, ")
CORRECTIONS = ("{wrong}, no wait, make that {right}", "{wrong}, uh, actually {right}",
               "{wrong}... sorry, {right}", "{wrong}, no, {right}")
CODE_CHARS = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # codes leave out I, O, 0 and 1 (read alike)


@dataclass(slots=True, frozen=True)
class Said:
    """A slot value and how the caller said it."""

    value: Any
    spoken: str

    def __str__(self) -> str:
        return self.spoken


def words(n: int) -> str:
    """0 <= n < 10000 in words: 42 -> "forty two", 305 -> "three hundred five"."""
    if not 0 <= n < 10_000:
        raise ValueError(f"words: expected 0 <= n < 10000, got {n}")
    if n < 20:
        return _ONES[n]
    if n < 100:
        return _TENS[n // 10] + ("" if n % 10 == 0 else " " + _ONES[n % 10])
    if n < 1000:
        rest = "" if n % 100 == 0 else " " + words(n % 100)
        return f"{_ONES[n // 100]} hundred{rest}"
    rest = "" if n % 1000 == 0 else " " + words(n % 1000)
    return f"{words(n // 1000)} thousand{rest}"


def ordinal(n: int) -> str:
    """1..31 -> "first".."thirty first"."""
    if n in _ORDINALS:
        return _ORDINALS[n]
    if n < 20:
        return words(n) + "th"
    if n % 10 == 0:
        return _TENS[n // 10][:-1] + "ieth"
    return f"{_TENS[n // 10]} {ordinal(n % 10)}"


def count(rng: random.Random, low: int, high: int, unit: str = "") -> Said:
    """A small count: "four people", "a party of six", "just the two of us"."""
    n = rng.randint(low, high)
    if unit == "people":
        forms = [f"{words(n)} people", f"a party of {words(n)}", f"{words(n)} of us"]
        if n == 1:
            forms = ["just me", "one person", "just one"]
        elif n == 2:
            forms += ["just the two of us", "two"]
    else:
        plural = unit if n == 1 or not unit else unit + "s"
        forms = [f"{words(n)} {plural}".strip()]
    return Said(n, rng.choice(forms))


def clock(rng: random.Random, first_hour: int, last_hour: int, quarter: bool = True) -> Said:
    """A time of day as "HH:MM" (24 h), spoken: "seven thirty", "half past six", "noon"."""
    hour = rng.randint(first_hour, last_hour)
    minute = rng.choice((0, 15, 30, 45) if quarter else (0, 10, 20, 30, 40, 50))
    h12 = hour % 12 or 12
    half = "pm" if hour >= 12 else "am"
    said = words(h12) + ("" if minute == 0 else " " + _minutes(minute))
    forms = [said if minute else f"{said} o'clock", f"{said} {half}"]
    if minute == 30:
        forms.append(f"half past {words(h12)}")
    if minute == 15:
        forms.append(f"quarter past {words(h12)}")
    if minute == 45:
        forms.append(f"quarter to {words(h12 % 12 + 1)}")
    if hour == 12 and minute == 0:
        forms.append("noon")
    return Said(f"{hour:02d}:{minute:02d}", rng.choice(forms))


def _minutes(minute: int) -> str:
    return words(minute) if minute >= 10 else "oh " + words(minute)


def day(rng: random.Random, today: date, within: int = 21) -> Said:
    """A date 0..within days ahead, spoken relative to today or by name ("december fifth")."""
    offset = rng.randint(0, within)
    when = today + timedelta(days=offset)
    forms = [f"{_MONTHS[when.month - 1]} {ordinal(when.day)}", f"the {ordinal(when.day)}"]
    if offset == 0:
        forms = ["today", "today", "this evening" if rng.random() < 0.3 else "today"]
    elif offset == 1:
        forms = ["tomorrow", "tomorrow"]
    elif offset < 7:
        forms.append(f"this {_WEEKDAYS[when.weekday()]}")
    elif offset < 14:
        forms.append(f"next {_WEEKDAYS[when.weekday()]}")
    return Said(when.isoformat(), rng.choice(forms))


def money(rng: random.Random, low: int, high: int, cents: bool = True) -> Said:
    """An amount in dollars: 42.5 -> "forty two fifty", "forty two dollars and fifty cents"."""
    dollars = rng.randint(low, high)
    c = rng.choice((0, 0, 25, 50, 75, 99)) if cents else 0
    value = dollars + c / 100
    forms = [f"{words(dollars)} dollars" + (f" and {words(c)} cents" if c else "")]
    if c:
        forms.append(f"{words(dollars)} {words(c)}")
    return Said(round(value, 2), rng.choice(forms))


def digits(rng: random.Random, length: int, group: int = 0) -> Said:
    """A digit string ("4815"), read digit by digit with "oh" and "double" sometimes."""
    value = "".join(rng.choice("0123456789") for _ in range(length))
    spoken, i = [], 0
    while i < len(value):
        d = value[i]
        if i + 1 < len(value) and value[i + 1] == d and rng.random() < 0.4:
            spoken.append("double " + _ONES[int(d)])
            i += 2
            continue
        spoken.append("oh" if d == "0" and rng.random() < 0.5 else _ONES[int(d)])
        i += 1
    return Said(value, " ".join(spoken))


def code(rng: random.Random, length: int = 6) -> str:
    """A confirmation code like "R7K2QX" (letters without I/O to stay readable)."""
    return "".join(rng.choice(CODE_CHARS) for _ in range(length))


def spell(text: str) -> str:
    """Read a code out: "R7K" -> "R 7 K"."""
    return " ".join(text)


def with_article(word: str) -> str:
    """"window" -> "a window", "aisle" -> "an aisle"."""
    return ("an " if word[0] in "aeiou" else "a ") + word


def duration_words(minutes: int) -> str:
    """A wait or a trip: 1 -> "one minute", 6 -> "six minutes"."""
    return "one minute" if minutes == 1 else f"{words(minutes)} minutes"


def filler(rng: random.Random, p: float = 0.6, first_turn: bool = False) -> str:
    """An opening filler ("um, ", "uh, "; greetings too on the caller's first turn) with probability p."""
    if rng.random() >= p:
        return ""
    return rng.choice(FILLERS + GREETINGS if first_turn else FILLERS)


def year(n: int) -> str:
    """1987 -> "nineteen eighty seven", 2005 -> "two thousand five", 2010 -> "twenty ten"."""
    if 2000 <= n < 2010:
        return words(n)
    return house_number(n)


def house_number(n: int) -> str:
    """How street numbers are read: 3886 -> "thirty eight eighty six", 412 -> "four twelve"."""
    if n >= 1000 and n % 100 >= 10:
        return f"{words(n // 100)} {words(n % 100)}"
    if 100 <= n < 1000 and n % 100 >= 10:
        return f"{words(n // 100)} {words(n % 100)}"
    return words(n)


def corrected(rng: random.Random, right: Said, wrong: Said, p: float) -> str:
    """With probability p the caller first says the wrong value and corrects it mid-sentence."""
    if rng.random() >= p or wrong.spoken == right.spoken:
        return right.spoken
    return rng.choice(CORRECTIONS).format(wrong=wrong.spoken, right=right.spoken)


def long_date(when: date) -> str:
    """"Monday, November 30, 2026" for system prompts."""
    return f"{_WEEKDAYS[when.weekday()].title()}, {_MONTHS[when.month - 1].title()} {when.day}, {when.year}"


def spoken_date(iso: str) -> str:
    """An ISO date (YYYY-MM-DD) -> the month and spoken ordinal day ("December fifth"), for the
    assistant's replies."""
    when = date.fromisoformat(iso)
    return f"{_MONTHS[when.month - 1].title()} {ordinal(when.day)}"


def spoken_time(hhmm: str) -> str:
    """"19:30" -> "seven thirty pm", for the assistant's replies."""
    hour, minute = (int(x) for x in hhmm.split(":"))
    h12, half = hour % 12 or 12, "pm" if hour >= 12 else "am"
    return words(h12) + ("" if minute == 0 else " " + _minutes(minute)) + " " + half


def spoken_money(value: float) -> str:
    dollars, cents = int(value), round((value - int(value)) * 100)
    return f"{words(dollars)} dollars" + (f" and {words(cents)} cents" if cents else "")
