"""Airline callers (customer service): flight status, bookings, changes, seats.

Held out: add_checked_bag (its tool is called by no train goal). The later train goals add a
misread code retried, a delay or cancellation then a move, a status found from a booking, a
connection checked, an arrival for someone else, seats together retried and a date change that
loses the seat."""

from __future__ import annotations

import re

from turnspec.workloads.catalog import domain, load_tools, scenario
from turnspec.workloads.dialogue import Dialogue, days_after, minutes_after
from turnspec.workloads.spoken import CODE_CHARS, Said, house_number, with_article

AIRLINE = domain("airline", ("SkyBridge Airlines", "Pacific Crest Air", "Northstar Airways"), "customer service",
                 load_tools("airline"))
ROUTES = ("SFO to JFK", "ORD to LAX", "SEA to DEN", "BOS to MIA", "ATL to SEA", "DFW to PHX")


def _flight(d: Dialogue) -> tuple[str, str]:
    airline = d.pick("SB", "PC", "NS")
    number = d.rng.randint(10, 2999)
    return f"{airline}{number}", f"{' '.join(airline)} {house_number(number)}"


def _seat(d: Dialogue, seat: str) -> str:
    """Seats and gates as read out: "14A" -> "fourteen A", "B7" -> "B seven"."""
    return " ".join(d.words(int(p)) if p.isdigit() else p for p in re.findall(r"\d+|\D+", seat))


# -- first goals (workload 1) -------------------------------------------------------------------


@scenario(AIRLINE, "flight_status")
def flight_status(d: Dialogue) -> None:
    flight, said = _flight(d)
    day = d.day(2)
    d.user(f"is flight {said} on time {day}?", f"I'm checking on flight {said}, {day}", f"what's the status of {said}")
    r = d.call("flight_status", {"flight_number": flight, "date": day.value},
               d.pick({"status": "on_time", "departure": d.clock(6, 21).value, "gate": d.pick("B12", "A4", "D21")},
                      {"status": "delayed", "departure": d.clock(9, 22).value, "gate": d.pick("C3", "B7"), "delay_minutes": d.pick(25, 55, 90)}))
    if r["status"] == "on_time":
        d.say(f"Flight {said} is on time, departing at {d.time_words(r['departure'])} from gate {r['gate']}.")
    else:
        d.say(f"It's delayed about {d.words(r['delay_minutes'])} minutes; new departure {d.time_words(r['departure'])}, gate {r['gate']}.")


@scenario(AIRLINE, "change_flight")
def change_flight(d: Dialogue) -> None:
    code, last, day = d.code(6), d.last_name(), d.day(30)
    d.user(f"I need to change my flight. confirmation {code}, last name {last}",
           f"hi, can I move my trip? my code is {code}, name {last}")
    r = d.call("lookup_booking", {"confirmation_code": code.value, "last_name": last.value},
               {"route": d.pick("SFO to JFK", "ORD to LAX", "SEA to DEN"), "date": d.day(10).value, "passengers": 1})
    d.say(f"I found your {r['route']} trip on {d.date_words(r['date'])}. What date would you like instead?")
    when = d.pick("morning", "afternoon", "evening")
    d.user(f"{day}, in the {when} if possible", f"uh, {day}. {when} would be best")
    d.call("change_flight", {"confirmation_code": code.value, "new_date": day.value, "time_of_day": when},
           {"status": "changed", "departure": {"morning": "08:10", "afternoon": "13:25", "evening": "18:50"}[when], "fare_difference": 0})
    d.say(f"You're moved to {d.date_words(day.value)} in the {when}, no fare difference.")


@scenario(AIRLINE, "select_seat")
def select_seat(d: Dialogue) -> None:
    code, pref = d.code(6), d.pick("window", "aisle")
    row = d.count(5, 30)
    with_row = d.chance(0.4)
    d.user(f"can I get {'a' if pref == 'window' else 'an'} {pref} seat{f' around row {row}' if with_row else ''}? booking {code}",
           f"I'd like to pick a seat, {pref} please{f', row {row}' if with_row else ''}. my code is {code}")
    args = {"confirmation_code": code.value, "preference": pref, **({"row": row.value} if with_row else {})}
    seat = f"{row.value if with_row else d.rng.randint(8, 30)}{'A' if pref == 'window' else 'C'}"
    d.call("select_seat", args, {"status": "assigned", "seat": seat})
    d.say(f"You're in seat {d.spell(seat)}, {'a' if pref == 'window' else 'an'} {pref}.")


@scenario(AIRLINE, "add_checked_bag", heldout=True)
def add_checked_bag(d: Dialogue) -> None:
    code, bags = d.code(6), d.count(1, 3, "bag")
    d.user(f"I want to add {bags} to my booking, {code}", f"how do I check {bags}? my confirmation is {code}")
    r = d.call("add_checked_bag", {"confirmation_code": code.value, "bags": bags.value},
               {"status": "added", "fee": 35.0 * bags.value})
    d.say(f"Added. The fee is {d.money_words(r['fee'])}, charged to the card on file.")


@scenario(AIRLINE, "booking_details")
def booking_details(d: Dialogue) -> None:
    code, last = d.code(6), d.last_name()
    d.user(f"can you tell me what time my flight is? confirmation {code}, last name {last}",
           f"I need my trip details. code {code}, the name is {last}")
    r = d.call("lookup_booking", {"confirmation_code": code.value, "last_name": last.value},
               {"route": d.pick("BOS to MIA", "ATL to SEA", "DEN to PHX"), "date": d.day(20).value,
                "departure": d.clock(6, 21).value, "passengers": d.pick(1, 2, 3)})
    people = "" if r["passengers"] == 1 else f" for {d.words(r['passengers'])} passengers"
    d.say(f"You're on the {r['route']} flight on {d.date_words(r['date'])}, departing at "
          f"{d.time_words(r['departure'])}{people}.")


# -- more train goals (workload 1): retries, changes of mind, several lookups -------------------


@scenario(AIRLINE, "lookup_retry_then_seat")
def lookup_retry_then_seat(d: Dialogue) -> None:
    """The first code is misread, the lookup finds nothing; the caller rereads it, then picks a seat."""
    code, last = d.code(6), d.last_name()
    i = d.rng.randrange(6)
    misread = code.value[:i] + d.pick(*[c for c in CODE_CHARS if c != code.value[i]]) + code.value[i + 1:]
    d.user(f"I want to choose a seat on my flight. confirmation code {d.spell(misread)}, last name {last}",
           f"hi, can I pick my seat? the code is {d.spell(misread)} and my last name is {last}")
    d.call("lookup_booking", {"confirmation_code": misread, "last_name": last.value}, {"found": False})
    d.say(f"I couldn't find a booking under {d.spell(misread)} for {last.value}. Could you read the code once more?",
          f"Nothing comes up for code {d.spell(misread)}. Can you check the code again for me?")
    d.user(f"oh sorry, the code is {code}", f"let me look... okay, it's {code}, that's the code", filler=0.3)
    r = d.call("lookup_booking", {"confirmation_code": code.value, "last_name": last.value},
               {"found": True, "route": d.pick(*ROUTES), "date": d.day(25).value, "departure": d.clock(6, 21).value,
                "passengers": 1, "seat": None})
    d.say(f"Found it: {r['route']} on {d.date_words(r['date'])}, departing at {d.time_words(r['departure'])}. "
          "You don't have a seat yet. Window or aisle?")
    pref = d.pick("window", "aisle")
    d.user(f"{pref}, please", f"I'd like {with_article(pref)}", f"uh, {pref} if you have one", filler=0.3)
    seat = f"{d.rng.randint(6, 32)}{'A' if pref == 'window' else 'C'}"
    d.call("select_seat", {"confirmation_code": code.value, "preference": pref}, {"status": "assigned", "seat": seat})
    d.say(f"You're in seat {d.spell(seat)}, {with_article(pref)} seat, on {d.date_words(r['date'])}.")


@scenario(AIRLINE, "delay_then_move")
def delay_then_move(d: Dialogue) -> None:
    """A flight status check shows a long delay or a cancellation; the caller moves the trip."""
    flight, said = _flight(d)
    day = d.day(3)
    d.user(f"is flight {said} still leaving {day}?", f"I'm flying on {said} {day}, is it on time?",
           f"can you check flight {said} for {day}? I heard there are problems")
    delay = d.pick(3, 4, 5)
    r = d.call("flight_status", {"flight_number": flight, "date": day.value},
               d.pick({"status": "cancelled", "reason": d.pick("weather", "crew availability")},
                      {"status": "delayed", "delay_minutes": delay * 60, "departure": d.clock(18, 23).value,
                       "gate": d.pick("B9", "C14", "A2")}))
    if r["status"] == "cancelled":
        d.say(f"I'm sorry, flight {said} on {d.date_words(day.value)} is cancelled because of {r['reason']}. "
              "I can move you to another day. What's your confirmation code and last name?")
        ask = "okay, please move me"
    else:
        d.say(f"It's delayed about {d.words(delay)} hours, now leaving at {d.time_words(r['departure'])} from "
              f"gate {r['gate']}. If that doesn't work, I can move you to another day.")
        ask = "that's way too late for me, can you move me to another day"
    code, last = d.code(6), d.last_name()
    d.user(f"{ask}. code {code}, last name {last}", f"{ask}? my confirmation is {code}, name {last}")
    booking = d.call("lookup_booking", {"confirmation_code": code.value, "last_name": last.value},
                     {"route": d.pick(*ROUTES), "date": day.value, "passengers": d.pick(1, 2)})
    people = "you" if booking["passengers"] == 1 else "both passengers"
    d.say(f"I have {people} on the {booking['route']} flight. Which day would you like, and morning, afternoon or evening?")
    gap, when = d.pick(1, 2), d.pick("morning", "afternoon", "evening")
    d.user(f"{'the next day' if gap == 1 else 'two days later'}, in the {when}",
           f"um, {'the day after' if gap == 1 else 'two days after that'}, {when} please")
    new_day = days_after(day.value, gap)
    fare = 0 if r["status"] == "cancelled" else d.pick(0, 45.0, 89.5)
    moved = d.call("change_flight", {"confirmation_code": code.value, "new_date": new_day, "time_of_day": when},
                   {"status": "changed", "departure": {"morning": "07:40", "afternoon": "14:05", "evening": "19:20"}[when],
                    "fare_difference": fare})
    cost = f" The fare difference is {d.money_words(fare)}." if fare else " There's no fare difference."
    d.say(f"You're now on {d.date_words(new_day)}, departing at {d.time_words(moved['departure'])}.{cost}")


# -- workload 2 train goals (since=2) -----------------------------------------------------------


@scenario(AIRLINE, "status_from_booking", since=2)
def status_from_booking(d: Dialogue) -> None:
    """No flight number: the agent asks for the booking, looks it up, then checks that flight's status."""
    d.user("is my flight on time? I don't have the flight number handy", "can you check if my flight's delayed? "
           "I only have my confirmation email", "I want to know if my flight is leaving on time, but I lost the flight number")
    d.say("Sure, I can find it from your booking. What's the confirmation code and the last name?")
    code, last = d.code(6), d.last_name()
    d.user(f"the code is {code}, last name {last}", f"it's {last}, confirmation {code}", filler=0.3)
    (flight, said), day, dep, late = _flight(d), d.day(2), d.clock(7, 18).value, d.pick(0, 0, 35, 70)
    b = d.call("lookup_booking", {"confirmation_code": code.value, "last_name": last.value},
               {"found": True, "route": d.pick(*ROUTES), "flight_number": flight, "date": day.value, "departure": dep,
                "seat": f"{d.rng.randint(5, 34)}{d.pick('A', 'C', 'D', 'F')}", "passengers": 1})
    s = d.call("flight_status", {"flight_number": flight, "date": day.value},
               {"status": "delayed" if late else "on_time", "departure": minutes_after(dep, late), "gate": d.pick("A7", "B22", "C5"),
                "boarding": minutes_after(dep, late - 30), "arrival": minutes_after(dep, late + d.pick(95, 150, 220)),
                **({"delay_minutes": late} if late else {})})
    where = f"You're on flight {said}, {b['route']}, on {d.date_words(b['date'])}."
    if late:
        d.say(f"{where} It's running about {d.words(late)} minutes late: it now leaves at {d.time_words(s['departure'])} "
              f"from gate {_seat(d, s['gate'])}, boarding at {d.time_words(s['boarding'])}.")
    else:
        d.say(f"{where} It's on time, leaving at {d.time_words(s['departure'])} from gate {_seat(d, s['gate'])}. "
              f"Boarding starts at {d.time_words(s['boarding'])}.")
    if d.chance(0.35):
        d.user("and what time do we land?", "okay, and when does it get in?", filler=0.3)
        d.say(f"It's due to land at {d.time_words(s['arrival'])}.", f"Arrival is at {d.time_words(s['arrival'])}.")
    elif d.chance(0.5):
        d.user("do I already have a seat?", "oh, did I pick a seat on that one?", filler=0.3)
        d.say(f"Yes, you're in seat {_seat(d, b['seat'])}.", f"You do, seat {_seat(d, b['seat'])}.")


@scenario(AIRLINE, "connection_check", since=2)
def connection_check(d: Dialogue) -> None:
    """Two flight status checks for one connection; a tight layover gets a move offer that may be declined."""
    (first, said1), (second, said2), day = _flight(d), _flight(d), d.day(2)
    d.user(f"I'm flying {said1} and connecting to {said2} {day}. will I make my connection?",
           f"can you check two flights for me {day}? {said1}, then {said2}. I'm worried about the connection")
    late, layover, arr = d.pick(0, 40, 65), d.pick(25, 35, 55, 80), d.clock(9, 17).value
    a = d.call("flight_status", {"flight_number": first, "date": day.value},
               {"status": "delayed" if late else "on_time", "arrival": arr, "arrival_gate": d.pick("B4", "B17", "C9"),
                **({"delay_minutes": late} if late else {})})
    b = d.call("flight_status", {"flight_number": second, "date": day.value},
               {"status": "on_time", "departure": minutes_after(arr, layover), "gate": d.pick("C21", "D3", "A12")})
    how = f"is running about {d.words(late)} minutes late and" if late else "is on time and"
    d.say(f"Your first flight {how} lands at {d.time_words(a['arrival'])} at gate {_seat(d, a['arrival_gate'])}. {said2} leaves "
          f"on time at {d.time_words(b['departure'])} from gate {_seat(d, b['gate'])}, so you'd have about {d.words(layover)} minutes.")
    if layover >= 45:
        d.user("okay, that should be enough, right?", "so I'm fine?", "phew. that's doable", filler=0.3)
        d.say(f"That should be enough. Head straight to gate {_seat(d, b['gate'])} when you land.")
        return
    d.user("that sounds really tight", "hmm, that's not much time at all", filler=0.3)
    d.say("It is tight. If you'd rather not risk it, I can move your trip to the next morning. Would you like that?")
    if d.chance(0.5):
        d.user("no thanks, I'll run for it", "nah, I'll take my chances", "no, I really need to get there that day")
        d.say(f"Understood. When you land at gate {_seat(d, a['arrival_gate'])}, go straight to gate {_seat(d, b['gate'])}. Good luck!")
        return
    code, new_day = d.code(6), days_after(day.value, 1)
    d.user(f"yes, please. my confirmation code is {code}", f"okay, do that. the code is {code}", filler=0.3)
    r = d.call("change_flight", {"confirmation_code": code.value, "new_date": new_day, "time_of_day": "morning"},
               {"status": "changed", "departure": d.pick("07:05", "08:20", "09:45"), "fare_difference": 0})
    d.say(f"Done. You now leave the morning of {d.date_words(new_day)} at {d.time_words(r['departure'])}, no fare difference.")


@scenario(AIRLINE, "pickup_arrival", since=2)
def pickup_arrival(d: Dialogue) -> None:
    """Someone meeting a passenger asks when a flight lands (date asked for if missing) and where bags come out."""
    (flight, said), other = _flight(d), _flight(d)
    said = d.fix(Said(flight, said), Said(*other), 0.2)
    who, day = d.pick("my mom", "my husband", "a friend", "my daughter", "a client"), d.day(1)
    if d.chance(0.4):
        d.user(f"I'm picking up {who} at the airport. flight {said}, when does it land?",
               f"what time does flight {said} get in? I'm meeting {who}")
        d.say("Sure. Is that flight today or tomorrow?", "Happy to check. Which day is the flight?")
        d.user(f"{day}", f"it's {day}", filler=0.3)
    else:
        d.user(f"when does {said} land {day}? I'm picking up {who}", f"I'm meeting {who} off flight {said} {day}. is it on time?")
    arr, late = d.clock(8, 22).value, d.pick(0, 0, 20, 45)
    landed = day.value == d.today.isoformat() and d.chance(0.3)
    status = "landed" if landed else "delayed" if late else "en_route"
    r = d.call("flight_status", {"flight_number": flight, "date": day.value},
               {"status": status, "arrival": arr, "terminal": d.pick("A", "B", "C", "North"),
                "baggage_claim": d.rng.randint(2, 12), **({"delay_minutes": late} if status == "delayed" else {})})
    bags = f"carousel {d.words(r['baggage_claim'])}"
    if landed:
        d.say(f"It's already landed, at {d.time_words(arr)} in terminal {r['terminal']}. Bags are coming out at {bags}.")
    elif late:
        d.say(f"It's running about {d.words(late)} minutes late, now landing at {d.time_words(arr)} in terminal {r['terminal']}.")
    else:
        d.say(f"It's on schedule, landing at {d.time_words(arr)} on {d.date_words(day.value)} in terminal {r['terminal']}.")
    if not landed and d.chance(0.6):
        d.user("and where do the bags come out?", "do you know which baggage claim?", "which carousel should I wait at?")
        d.say(f"Baggage for that flight is at {bags}, terminal {r['terminal']}.", f"Bags come out at {bags}.")


@scenario(AIRLINE, "seats_together_retry", since=2)
def seats_together_retry(d: Dialogue) -> None:
    """Split-up travellers: a lookup shows their seats, the asked row is full, the next row offered works."""
    code, last = d.code(6), d.last_name()
    d.user(f"my partner and I got seated apart. can you put us together? booking {code}, last name {last}",
           f"hi, we're on the same booking but not sitting together. confirmation {code}, the name is {last}")
    apart = [f"{d.rng.randint(5, 15)}C", f"{d.rng.randint(20, 34)}F"]
    b = d.call("lookup_booking", {"confirmation_code": code.value, "last_name": last.value},
               {"found": True, "route": d.pick(*ROUTES), "date": d.day(20).value, "passengers": 2, "seats": apart})
    d.say(f"I see you both on the {b['route']} flight on {d.date_words(b['date'])}, in seats {_seat(d, apart[0])} and "
          f"{_seat(d, apart[1])}. Any row you'd like, and window or aisle?")
    row, pref = d.count(6, 30), d.pick("window", "aisle")
    d.user(f"row {row} if you can, {pref}", f"somewhere around row {row}, with the {pref}", filler=0.3)
    args, near = {"confirmation_code": code.value, "preference": pref, "row": row.value}, row.value + d.pick(1, 2, 3)
    d.call("select_seat", args, {"status": "unavailable", "reason": "no two seats together in that row", "next_row_with_pair": near})
    d.say(f"Row {d.words(row.value)} doesn't have two seats together anymore, but row {d.words(near)} does. Want those?")
    d.user("sure, that's fine", "yeah, take them", "okay, as long as we're together", filler=0.3)
    seats = [f"{near}{x}" for x in ("AB" if pref == "window" else "BC")]
    r = d.call("select_seat", {**args, "row": near}, {"status": "assigned", "seats": seats})
    d.say(f"You're together now: seats {_seat(d, r['seats'][0])} and {_seat(d, r['seats'][1])}, with the {pref} "
          f"in {_seat(d, r['seats'][0 if pref == 'window' else 1])}.")


@scenario(AIRLINE, "change_then_reseat", since=2)
def change_then_reseat(d: Dialogue) -> None:
    """A date change without a lookup (time of day asked for); the seat is lost and the caller may pick a new one."""
    code, day, (flight, said) = d.code(6), d.day(30), _flight(d)
    d.user(f"I need to push my flight to {day}. confirmation code {code}", f"can you move my trip to {day}? booking {code}")
    d.say("Sure. Would you like a morning, afternoon or evening flight?", "I can do that. Morning, afternoon or evening?")
    when, other = d.pick("morning", "afternoon", "evening"), d.pick("morning", "afternoon", "evening")
    d.user(f"{d.fix(Said(when, when), Said(other, other), 0.3)}, please", f"uh, {when} is best", filler=0.3)
    fare, old = d.pick(0, 0, 38.0, 74.5), f"{d.rng.randint(4, 30)}{d.pick('A', 'C', 'D', 'F')}"
    r = d.call("change_flight", {"confirmation_code": code.value, "new_date": day.value, "time_of_day": when},
               {"status": "changed", "flight_number": flight, "departure": {"morning": "08:35", "afternoon": "14:50",
                "evening": "19:15"}[when], "fare_difference": fare, "seat": None, "previous_seat": old})
    cost = f"The fare difference is {d.money_words(fare)}." if fare else "There's no fare difference."
    d.say(f"You're on flight {said} on {d.date_words(day.value)}, leaving at {d.time_words(r['departure'])}. {cost} "
          f"Your old seat, {_seat(d, old)}, didn't carry over. Would you like me to pick a new one?")
    if d.chance(0.35):
        d.user("no, I'll pick one at check in", "nah, it's fine, I'll do it later", filler=0.3)
        d.say("No problem. You can choose a seat any time before check-in.")
        return
    was, pref = "window" if old[-1] in "AF" else "aisle", d.pick("window", "aisle")
    art = "an" if pref == "aisle" else "a"
    d.user(f"yes, {pref} again" if pref == was else f"yes, but {art} {pref} this time", f"sure, {pref} please", filler=0.3)
    r = d.call("select_seat", {"confirmation_code": code.value, "preference": pref},
               {"status": "assigned", "seat": f"{d.rng.randint(4, 30)}{'A' if pref == 'window' else 'C'}"})
    d.say(f"Got it, you're in seat {_seat(d, r['seat'])}, {art} {pref} seat on {said}.")

