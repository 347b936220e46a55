"""Restaurant and airline callers."""

from __future__ import annotations

from turnspec.workloads.catalog import domain, load_tools, scenario
from turnspec.workloads.dialogue import Dialogue
from turnspec.workloads.spoken import house_number

RESTAURANT = domain("restaurant", ("Luigi's Trattoria", "Golden Wok", "The Blue Door Bistro", "Casa Verde"), "the host stand", load_tools("restaurant"))

DISHES = ("margherita pizza", "spaghetti carbonara", "chicken parmesan", "caesar salad", "garlic bread",
          "kung pao chicken", "vegetable lo mein", "pork dumplings", "mushroom risotto", "tiramisu")


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


AIRLINE = domain("airline", ("SkyBridge Airlines", "Pacific Crest Air", "Northstar Airways"), "customer service", load_tools("airline"))


def _flight(d: Dialogue) -> tuple[str, str]:
    airline = d.pick("SB", "PC", "NS")
    number = d.rng.randint(10, 2999)
    return f"{airline}{number}", f"{' '.join(airline)} {house_number(number)}"


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
