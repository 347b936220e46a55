"""Workload version 2 (since=2): ten more train goals for the airline and restaurant domains.

New flows, not new tools: a lookup feeding a status check, two checks for one connection, an arrival
check for someone else, a seat request retried, a date change losing the seat, a cancellation under
the wrong name, a sold-out takeout dish, two nights compared, a group over two tables, bar seats
tonight. Only tools the version 1 train scenarios call (add_checked_bag, modify_reservation stay out).
"""

from __future__ import annotations

import re

from turnspec.workloads.catalog import scenario
from turnspec.workloads.dialogue import Dialogue, days_after
from turnspec.workloads.domains_hospitality import AIRLINE, RESTAURANT, _flight
from turnspec.workloads.scenarios_more_a import ROUTES
from turnspec.workloads.scenarios_more_b import PRICES
from turnspec.workloads.spoken import Said

PLACE = {"indoor": "inside", "patio": "on the patio", "bar": "at the bar"}


def _plus(hhmm: str, minutes: int) -> str:
    total = (int(hhmm[:2]) * 60 + int(hhmm[3:]) + minutes) % (24 * 60)
    return f"{total // 60:02d}:{total % 60:02d}"


def _seat(d: Dialogue, seat: str) -> str:
    """Seats and gates as read out: "14A" -> "fourteen A", "B7" -> "B seven"."""
    return " ".join(d.words(int(p)) if p.isdigit() else p for p in re.findall(r"\d+|\D+", seat))


def _dishes(d: Dialogue, items: list[dict]) -> str:
    return " and ".join(f"{d.words(i['quantity'])} {i['dish']}" for i in items)


def _booked(d: Dialogue, args: dict) -> dict:
    return d.call("book_table", args, {"status": "confirmed", "confirmation_code": d.code(6).value, **args})


# -- airline ------------------------------------------------------------------------------------


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
               {"status": "delayed" if late else "on_time", "departure": _plus(dep, late), "gate": d.pick("A7", "B22", "C5"),
                "boarding": _plus(dep, late - 30), "arrival": _plus(dep, late + d.pick(95, 150, 220)),
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
               {"status": "on_time", "departure": _plus(arr, layover), "gate": d.pick("C21", "D3", "A12")})
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


# -- restaurant ---------------------------------------------------------------------------------


@scenario(RESTAURANT, "cancel_name_mismatch", since=2)
def cancel_name_mismatch(d: Dialogue) -> None:
    """A cancellation fails on the name; the booking was under someone else's name, then a fee question."""
    code, name, other = d.code(6), d.person(), d.person()
    if d.chance(0.4):
        d.user(f"I need to cancel a reservation, the code is {code}", f"can you cancel my booking? code {code}")
        d.say("Sure. And what name is the reservation under?", "Of course. What's the name on it?")
        d.user(f"{name}", f"it's {name}", filler=0.3)
    else:
        d.user(f"please cancel my table, code {code}, name {name}", f"we can't make it anymore. code {code}, under {name}")
    d.call("cancel_reservation", {"confirmation_code": code.value, "name": name.value}, {"status": "error", "error": "name_mismatch"})
    d.say(f"Code {d.spell(code.value)} is under a different name than {name.value}. Could someone else have booked it?",
          f"The name on that reservation doesn't match {name.value}. Might it be under another name?")
    who = d.pick("my wife", "my husband", "my boss", "my sister", "my friend")
    d.user(f"oh right, {who} booked it. try {other}", f"ah, it's probably under {who}'s name, {other}", filler=0.3)
    party, when = d.rng.randint(2, 10), d.clock(17, 21).value
    fee = 25.0 if party >= 8 and d.chance(0.5) else 0
    r = d.call("cancel_reservation", {"confirmation_code": code.value, "name": other.value},
               {"status": "cancelled", "party_size": party, "date": d.day(7).value, "time": when, "cancellation_fee": fee})
    told = f"the table for {d.words(r['party_size'])} on {d.date_words(r['date'])} at {d.time_words(r['time'])}"
    if fee:
        d.say(f"Found it under {other.value}, and it's cancelled: {told}. Large parties have a cancellation fee, so "
              f"{d.money_words(fee)} goes on the card you booked with.")
    else:
        d.say(f"Thanks, that's the one. I've cancelled {told}.", f"Found it under {other.value}. {told[0].upper() + told[1:]} is cancelled.")
    if not fee and d.chance(0.5):
        d.user("there's no charge for that, right?", "you won't charge us anything, will you?", filler=0.3)
        d.say("Right, there's no cancellation fee.", "No, there's no fee for this one.")


@scenario(RESTAURANT, "takeout_sold_out", since=2)
def takeout_sold_out(d: Dialogue) -> None:
    """All details in one turn; the order is rejected for a sold-out dish; the caller swaps or drops it."""
    picks, time, name = d.rng.sample(list(PRICES), 4), d.clock(17, 21), d.person()
    items = [{"dish": dish, "quantity": d.rng.randint(1, 2)} for dish in picks[:d.pick(2, 3)]]
    d.user(f"can I get {_dishes(d, items)} for pickup at {time}? name's {name}",
           f"takeout order for {name}: {_dishes(d, items)}, ready around {time}")
    out, args = d.pick(*items)["dish"], {"items": items, "pickup_time": time.value, "name": name.value}
    d.call("place_takeout_order", args, {"status": "rejected", "error": "item_unavailable", "unavailable": [out]})
    d.say(f"I'm sorry, we're out of the {out} tonight. Would you like something else instead, or should I leave it off?")
    if d.chance(0.5):
        swap = picks[3]
        d.user(f"oh, okay. give me a {swap} instead", f"hmm, then a {swap}, I guess", filler=0.3)
        items = [{"dish": swap, "quantity": 1} if i["dish"] == out else i for i in items]
    else:
        d.user("just leave it off", "no worries, skip it", "that's fine, the rest is enough", filler=0.3)
        items = [i for i in items if i["dish"] != out]
    total, ready = round(sum(PRICES[i["dish"]] * i["quantity"] for i in items), 2), d.pick(time.value, _plus(time.value, 15))
    r = d.call("place_takeout_order", {**args, "items": items},
               {"status": "placed", "order_id": d.code(5).value, "total": total, "ready_at": ready})
    busy = "" if ready == time.value else " That's a little later than you asked, the kitchen is busy."
    d.say(f"Your order is in: {_dishes(d, items)}. The total is {d.money_words(r['total'])}, "
          f"ready at {d.time_words(r['ready_at'])}.{busy}")


@scenario(RESTAURANT, "two_nights_compare", since=2)
def two_nights_compare(d: Dialogue) -> None:
    """A flexible caller: two availability checks for two nights, the first full, then a booking."""
    party, day, time = d.count(2, 8, "people"), d.day(12), d.clock(18, 20)
    night2 = days_after(day.value, 1)
    d.user(f"we're {party}, looking for dinner around {time}, {day} or the night after. whichever has room",
           f"do you have a table for {party} {day} at {time}? if not, the next night works too")
    for when in (day.value, night2):
        r = d.call("check_availability", {"party_size": party.value, "date": when, "time": time.value},
                   {"available": False, "alternatives": []} if when == day.value else
                   {"available": True, "seating": d.pick(["indoor", "patio"], ["indoor"], ["indoor", "bar"][:1 + (party.value <= 4)])})
    where = "inside" if len(r["seating"]) == 1 else f"inside or {PLACE[r['seating'][1]]}"
    d.say(f"{d.date_words(day.value)} is fully booked, but {d.date_words(night2)} at {d.time_words(time.value)} is open, "
          f"{where}. Should I book it?")
    name, pick, spot = d.person(), d.pick(*r["seating"]), d.chance(0.6)
    place = PLACE[pick]
    args = {"party_size": party.value, "date": night2, "time": time.value, "name": name.value}
    if spot:
        args["seating"] = pick
        d.user(f"yes, {place} please. it's under {name}", f"great, {place} if we can. name is {name}", filler=0.3)
    else:
        d.user(f"perfect, book it for {name}", f"yeah, the next night works. it's {name}", filler=0.3)
    r = _booked(d, args)
    d.say(f"You're booked for {d.date_words(night2)} at {d.time_words(time.value)}, {d.words(party.value)} guests"
          f"{', ' + place if spot else ''}. Your code is {d.spell(r['confirmation_code'])}.")


@scenario(RESTAURANT, "group_two_tables", since=2)
def group_two_tables(d: Dialogue) -> None:
    """A group too big for one table: the availability check offers two tables side by side, booked twice."""
    party, day, time, name = d.count(14, 20, "people"), d.day(21), d.clock(17, 20), d.person()
    d.user(f"I need a table for a group, {party}, {day} at {time}", f"can you fit {party} {day}? around {time}")
    sizes = [party.value // 2, party.value - party.value // 2]
    r = d.call("check_availability", {"party_size": party.value, "date": day.value, "time": time.value},
               {"available": False, "reason": "party larger than largest table", "largest_table": 10, "adjacent_tables": sizes})
    a, b = (d.words(n) for n in r["adjacent_tables"])
    d.say(f"Our biggest table seats {d.words(r['largest_table'])}, but I can put you at two tables next to each other, "
          + (f"one for {a} and one for {b}." if a != b else f"{a} at each.") + " Would that work?")
    if d.chance(0.25):
        d.user("no, we really need to sit together. thanks anyway", "hmm, no, we want one long table. never mind")
        d.say("Understood, I'm sorry we can't fit everyone at one table. I hope you find a great spot.")
        return
    d.user(f"that works. put it under {name}", f"sure, two tables is fine. name is {name}", filler=0.3)
    codes = [_booked(d, {"party_size": n, "date": day.value, "time": time.value, "name": name.value,
                         "notes": f"group of {party.value}, table {i + 1} of 2, seat next to the other table"})
             ["confirmation_code"] for i, n in enumerate(sizes)]
    d.say(f"Both tables are booked under {name.value} for {d.date_words(day.value)} at {d.time_words(time.value)}, side by "
          f"side. The codes are {d.spell(codes[0])} and {d.spell(codes[1])}.")


@scenario(RESTAURANT, "tonight_bar_or_later", since=2)
def tonight_bar_or_later(d: Dialogue) -> None:
    """Tonight is full at the asked time: bar seats then or a table later; the caller may waver, then books."""
    party, time = d.count(1, 4, "people"), d.clock(17, 20)
    d.user(f"any chance of a table tonight at {time}? {party}", f"can we come in tonight around {time}? we're {party}")
    tonight, later = d.today.isoformat(), _plus(time.value, d.pick(60, 75, 90))
    d.call("check_availability", {"party_size": party.value, "date": tonight, "time": time.value},
           {"available": False, "bar_seats_open": 4, "next_table": later})
    d.say(f"The dining room is full at {d.time_words(time.value)}, but I have seats at the bar then, or a table at "
          f"{d.time_words(later)}. Which would you like?")
    bar = d.chance(0.5)
    if d.chance(0.3):
        d.user("the bar is fine... actually, no, we'll wait for the table" if not bar else
               "the later table... hmm, no, the bar is fine", filler=0.3)
    elif bar:
        d.user("the bar is fine", "we'll sit at the bar, sure", "bar seats work for us", filler=0.3)
    else:
        d.user(f"we'll take the table at {d.time_words(later)}", "we'd rather have a table, the later one", filler=0.3)
    d.say("Great. What name should I put it under?", "Sounds good. Can I get a name?")
    name, note = d.person(), d.pick("", "", "anniversary", "birthday")
    said = {"": "", "anniversary": ". oh, and it's our anniversary", "birthday": ", and it's my friend's birthday"}[note]
    d.user(f"{name}{said}", f"it's {name}{said}")
    args = {"party_size": party.value, "date": tonight, "time": time.value if bar else later, "name": name.value,
            **({"seating": "bar"} if bar else {}), **({"notes": note} if note else {})}
    r = _booked(d, args)
    d.say(f"You're set for tonight at {d.time_words(r['time'])}{' at the bar' if bar else ''}, {name.value.split()[0]}. "
          f"Code {d.spell(r['confirmation_code'])}." + (f" I've noted the {note}." if note else ""))
