"""Restaurant callers (the host stand): tables, changes, takeout.

Held out: modify_reservation (its tool is called by no train goal). The later train goals add a
large party with notes, a changed takeout order, a cancellation under another name, a sold-out
dish, two nights compared, a group over two tables and bar seats tonight."""

from __future__ import annotations

from turnspec.workloads.catalog import domain, load_tools, scenario
from turnspec.workloads.dialogue import Dialogue, days_after, minutes_after

RESTAURANT = domain("restaurant", ("Luigi's Trattoria", "Golden Wok", "The Blue Door Bistro", "Casa Verde"),
                    "the host stand", load_tools("restaurant"))
DISHES = ("margherita pizza", "spaghetti carbonara", "chicken parmesan", "caesar salad", "garlic bread",
          "kung pao chicken", "vegetable lo mein", "pork dumplings", "mushroom risotto", "tiramisu")
PRICES = {"margherita pizza": 16.0, "spaghetti carbonara": 18.5, "chicken parmesan": 21.0, "caesar salad": 11.5,
          "garlic bread": 6.0, "mushroom risotto": 19.0, "tiramisu": 8.5, "pork dumplings": 9.5}
PLACE = {"indoor": "inside", "patio": "on the patio", "bar": "at the bar"}


def _dishes(d: Dialogue, items: list[dict]) -> str:
    return " and ".join(f"{d.words(i['quantity'])} {i['dish']}" for i in items)


def _booked(d: Dialogue, args: dict) -> dict:
    return d.call("book_table", args, {"status": "confirmed", "confirmation_code": d.code(6).value, **args})


# -- first goals (workload 1) -------------------------------------------------------------------


@scenario(RESTAURANT, "book_table")
def book_table(d: Dialogue) -> None:
    party, day, time, name = d.count(1, 10, "people"), d.day(14), d.clock(17, 21), d.person()
    said_party = d.fix(party, d.count(1, 10, "people"))
    if d.chance(0.35):  # caller forgets the time; the agent asks
        d.user(f"I'd like to book a table for {said_party} {day}", f"can I get a reservation for {said_party} {day}?")
        d.say("Sure! What time would you like?", "Happy to help. What time works for you?")
        d.user(f"{time}", f"around {time} please", f"uh, let's say {time}")
    else:
        d.user(f"I'd like to book a table for {said_party} {day} at {time}",
               f"yeah, do you have a table {day} at {time} for {said_party}?",
               f"I want to make a reservation, {said_party}, {day}, {time}")
    d.say("Great, and what name should I put it under?", "Can I get a name for the reservation?")
    d.user(f"it's {name}", f"{name}", f"under {name}, thanks")
    args = {"party_size": party.value, "date": day.value, "time": time.value, "name": name.value}
    if d.chance(0.3):
        args["seating"] = d.pick("patio", "indoor")
    r = d.call("book_table", args, {"status": "confirmed", "confirmation_code": d.code(6).value, **args})
    d.say(f"You're all set, {name.value.split()[0]}: a table for {d.words(party.value)} on {d.date_words(day.value)} at "
          f"{d.time_words(time.value)}. Your confirmation code is {d.spell(r['confirmation_code'])}.",
          f"Done! {d.words(party.value).title()} guests, {d.date_words(day.value)}, {d.time_words(time.value)}. "
          f"Confirmation {d.spell(r['confirmation_code'])}.")


@scenario(RESTAURANT, "availability_then_book")
def availability_then_book(d: Dialogue) -> None:
    party, day, time = d.count(2, 8, "people"), d.day(10), d.clock(18, 20)
    d.user(f"do you have anything open {day} around {time} for {party}?",
           f"is there room {day} at {time}? we'd be {party}")
    hour = int(time.value[:2])
    options = [f"{hour - 1:02d}:30", f"{hour + 1:02d}:15"]
    d.call("check_availability", {"party_size": party.value, "date": day.value, "time": time.value},
           {"available": False, "alternatives": options})
    d.say(f"That time is full, but I have {d.time_words(options[0])} or {d.time_words(options[1])}. "
          "Would either work?", f"We're booked then, sorry. I could do {d.time_words(options[0])} or "
          f"{d.time_words(options[1])}.")
    choice = d.rng.choice(options)
    name = d.person()
    d.user(f"uh, {d.time_words(choice)} works, name is {name}", f"let's do {d.time_words(choice)}. it's for {name}")
    args = {"party_size": party.value, "date": day.value, "time": choice, "name": name.value}
    r = d.call("book_table", args, {"status": "confirmed", "confirmation_code": d.code(6).value, **args})
    d.say(f"Booked for {d.time_words(choice)}. Your code is {d.spell(r['confirmation_code'])}. See you then!")


@scenario(RESTAURANT, "modify_reservation", heldout=True)
def modify_reservation(d: Dialogue) -> None:
    code, time, party = d.code(6), d.clock(17, 21), d.count(2, 12, "people")
    change_time = d.chance(0.5)
    want = f"move it to {time}" if change_time else f"make it {party} instead"
    d.user(f"I have a reservation, code {code}, and I need to {want}",
           f"hi, I need to change my booking. the code is {code}. can you {want}?")
    args = {"confirmation_code": code.value, **({"new_time": time.value} if change_time else {"new_party_size": party.value})}
    d.call("modify_reservation", args, {"status": "updated", **args})
    d.say("All updated. " + (f"We'll see you at {d.time_words(time.value)}." if change_time
                             else f"The table is now for {d.words(party.value)}."))


@scenario(RESTAURANT, "cancel_reservation")
def cancel_reservation(d: Dialogue) -> None:
    code, name = d.code(6), d.person()
    d.user(f"I need to cancel my reservation. it's under {name}, code {code}",
           f"uh, something came up, can you cancel {name}'s table? code {code}")
    d.call("cancel_reservation", {"confirmation_code": code.value, "name": name.value}, {"status": "cancelled"})
    d.say("Your reservation is cancelled. Hope to see you another time!", "Done, it's cancelled. Thanks for letting us know.")


@scenario(RESTAURANT, "takeout_order")
def takeout_order(d: Dialogue) -> None:
    picks = d.rng.sample(DISHES, d.rng.randint(1, 3))
    items = [{"dish": dish, "quantity": d.rng.randint(1, 3)} for dish in picks]
    said = " and ".join(f"{d.words(i['quantity'])} {i['dish']}" for i in items)
    time, name = d.clock(17, 21), d.person()
    d.user(f"I'd like to order takeout: {said}", f"can I get {said} for pickup?")
    d.say("Sure thing. What time would you like to pick it up, and what's the name?")
    d.user(f"{time}, and it's {name}", f"um, {time}. name's {name}")
    r = d.call("place_takeout_order", {"items": items, "pickup_time": time.value, "name": name.value},
               {"order_id": d.code(5).value, "total": round(sum(12.5 * i["quantity"] for i in items), 2)})
    d.say(f"Got it. Your total is {d.money_words(r['total'])}, ready at {d.time_words(time.value)}.")


@scenario(RESTAURANT, "availability_no_booking")
def availability_no_booking(d: Dialogue) -> None:
    party, day, time = d.count(2, 10, "people"), d.day(14), d.clock(17, 21)
    d.user(f"any chance you have a table {day} at {time} for {party}?", f"checking if you've got room {day}, {time}, {party}")
    r = d.call("check_availability", {"party_size": party.value, "date": day.value, "time": time.value},
               d.pick({"available": True}, {"available": False, "alternatives": [f"{int(time.value[:2]) + 1:02d}:00"]}))
    if r["available"]:
        d.say(f"Yes, {d.time_words(time.value)} on {d.date_words(day.value)} is open. Shall I book it?")
    else:
        d.say(f"{d.time_words(time.value)} is full; {d.time_words(r['alternatives'][0])} is open. Want that instead?")
    d.user("let me check with everyone and call back", "I'll ask my friends first, thanks", filler=0.3)
    d.say("Of course. Call us anytime.")


# -- more train goals (workload 1): retries, changes of mind, several lookups -------------------


@scenario(RESTAURANT, "party_with_notes")
def party_with_notes(d: Dialogue) -> None:
    """A large party checks seating options, then books with a seating choice and notes."""
    party, day, time = d.count(6, 14, "people"), d.day(21), d.clock(18, 20)
    occasion = d.pick("birthday", "anniversary", "retirement")
    allergy = d.pick("peanut", "shellfish", "gluten")
    d.user(f"we're planning a {occasion} dinner {day} at {time} for {party}. could we sit on the patio?",
           f"do you have room for {party} {day} around {time}? it's a {occasion}, and we'd love the patio")
    patio = party.value <= 10
    d.call("check_availability", {"party_size": party.value, "date": day.value, "time": time.value},
           {"available": True, "seating": ["indoor", "patio"] if patio else ["indoor"], "max_patio_party": 10})
    if patio:
        d.say(f"Yes, the patio is open for {d.words(party.value)} at {d.time_words(time.value)} on "
              f"{d.date_words(day.value)}. What name should I book it under?")
    else:
        d.say(f"I have a table for {d.words(party.value)} then, but the patio only takes up to ten, so it would be "
              "indoors. Is that okay, and what name should I use?")
    name = d.person()
    d.user(f"{'great' if patio else 'indoors is fine'}. it's {name}, and one guest has a {allergy} allergy",
           f"under {name}. oh, and someone has a {allergy} allergy", filler=0.3)
    notes = f"{occasion}; one guest has a {allergy} allergy"
    args = {"party_size": party.value, "date": day.value, "time": time.value, "name": name.value,
            "seating": "patio" if patio else "indoor", "notes": notes}
    r = d.call("book_table", args, {"status": "confirmed", "confirmation_code": d.code(6).value, **args})
    d.say(f"You're booked, {name.value.split()[0]}: {d.words(party.value)} on the {args['seating']}, "
          f"{d.date_words(day.value)} at {d.time_words(time.value)}. I've noted the {allergy} allergy and the "
          f"{occasion}. Your code is {d.spell(r['confirmation_code'])}.")


@scenario(RESTAURANT, "takeout_changed_order")
def takeout_changed_order(d: Dialogue) -> None:
    """The caller changes the takeout order before it is placed; the agent reads back the total."""
    first, second, extra = d.rng.sample(list(PRICES), 3)
    items = [{"dish": first, "quantity": d.rng.randint(1, 2)}, {"dish": second, "quantity": 1}]
    d.user(f"can I get a pickup order? {_dishes(d, items)}", f"I'd like to order {_dishes(d, items)} to go")
    d.say("Sure. Anything else?", "Got it. Would you like anything else?")
    if d.chance(0.5):
        items[0]["quantity"] += 1
        d.user(f"actually, make that {d.words(items[0]['quantity'])} {first}", f"oh, change the {first} to {d.words(items[0]['quantity'])}")
    else:
        items = [items[0], {"dish": extra, "quantity": 1}]
        d.user(f"actually, swap the {second} for a {extra}", f"hmm, no {second}, give me a {extra} instead")
    time, name = d.clock(17, 21), d.person()
    d.say(f"Okay, that's {_dishes(d, items)}. What time will you pick it up, and what's the name?")
    d.user(f"{time}, name's {name}", f"around {time}. it's for {name}", filler=0.3)
    total = round(sum(PRICES[i["dish"]] * i["quantity"] for i in items), 2)
    r = d.call("place_takeout_order", {"items": items, "pickup_time": time.value, "name": name.value},
               {"order_id": d.code(5).value, "total": total, "ready_at": time.value})
    d.say(f"Your order is in. The total is {d.money_words(r['total'])}, ready at {d.time_words(r['ready_at'])}. "
          f"Order number {d.spell(r['order_id'])}.")


# -- workload 2 train goals (since=2) -----------------------------------------------------------


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
    total, ready = round(sum(PRICES[i["dish"]] * i["quantity"] for i in items), 2), d.pick(time.value, minutes_after(time.value, 15))
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
    tonight, later = d.today.isoformat(), minutes_after(time.value, d.pick(60, 75, 90))
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

