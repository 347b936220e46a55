"""More train scenarios for the airline, bank, clinic and e-commerce domains.

They exist to give the train split more caller goals, so a drafter trained on the target's
answers must generalise rather than memorise a few scripts: lookups that fail and are retried,
two lookups before an action, callers who change their mind, and replies that read several
fields of one tool result. They call only tools that the domains' other train scenarios call;
the tools reserved for held-out goals (add_checked_bag, report_lost_card,
request_prescription_refill, track_refund) stay out.
"""

from __future__ import annotations

from datetime import date

from turnspec.workloads import spoken
from turnspec.workloads.catalog import scenario
from turnspec.workloads.dialogue import FIRST_NAMES, LAST_NAMES, Dialogue, days_after
from turnspec.workloads.domains_care import CLINIC, DOCTORS
from turnspec.workloads.domains_commerce import ITEMS, SHOP
from turnspec.workloads.domains_hospitality import AIRLINE, _flight
from turnspec.workloads.domains_money import BANK, _verify
from turnspec.workloads.spoken import Said

ROUTES = ("SFO to JFK", "ORD to LAX", "SEA to DEN", "BOS to MIA", "ATL to SEA", "DFW to PHX")
CODE_CHARS = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"


def _doctor(name: str) -> str:
    return name.replace("dr_", "doctor ").title()


def _an(word: str) -> str:
    return ("an " if word[0] in "aeiou" else "a ") + word


# -- airline ------------------------------------------------------------------------------------


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
    d.user(f"{pref}, please", f"I'd like {_an(pref)}", f"uh, {pref} if you have one", filler=0.3)
    seat = f"{d.rng.randint(6, 32)}{'A' if pref == 'window' else 'C'}"
    d.call("select_seat", {"confirmation_code": code.value, "preference": pref}, {"status": "assigned", "seat": seat})
    d.say(f"You're in seat {d.spell(seat)}, {_an(pref)} seat, on {d.date_words(r['date'])}.")


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


# -- bank ---------------------------------------------------------------------------------------


@scenario(BANK, "cover_low_checking")
def cover_low_checking(d: Dialogue) -> None:
    """Both balances first, then a transfer from savings to cover checking."""
    d.user("I think my checking is running low. can you tell me both my checking and savings balances?",
           "how much do I have in checking and in savings? I might need to move some over",
           "I've got a big payment coming out, can you check my balances?")
    _verify(d)
    chk = d.call("get_balance", {"account": "checking"}, {"account": "checking", "balance": d.money(5, 90).value, "currency": "USD"})
    sav = d.call("get_balance", {"account": "savings"}, {"account": "savings", "balance": d.money(900, 9000).value, "currency": "USD"})
    d.say(f"Thanks, you're verified. Checking has {d.money_words(chk['balance'])} and savings has "
          f"{d.money_words(sav['balance'])}. Would you like to move some over?")
    amount = d.money(100, 800, cents=False)
    d.user(f"yes, move {d.fix(amount, d.money(100, 800, cents=False))} from savings into checking",
           f"okay, put {amount} into checking from savings", filler=0.3)
    new = round(chk["balance"] + amount.value, 2)
    r = d.call("transfer_funds", {"from_account": "savings", "to_account": "checking", "amount": amount.value},
               {"status": "completed", "reference": d.code(8).value, "new_checking_balance": new})
    d.say(f"Done. {d.money_words(amount.value).capitalize()} moved to checking, which now has "
          f"{d.money_words(r['new_checking_balance'])}. Reference {d.spell(r['reference'][:4])}.")


@scenario(BANK, "transfer_declined_retry")
def transfer_declined_retry(d: Dialogue) -> None:
    """A transfer is declined for insufficient funds; the caller moves a smaller amount."""
    src = d.pick("checking", "savings")
    dst = "savings" if src == "checking" else "checking"
    amount = d.money(1500, 5000, cents=False)
    d.user(f"please transfer {amount} from {src} to {dst}", f"I need to move {amount} out of {src} into {dst}")
    _verify(d)
    args = {"from_account": src, "to_account": dst, "amount": amount.value}
    r = d.call("transfer_funds", args, {"status": "declined", "reason": "insufficient_funds",
                                        "available_balance": d.money(200, int(amount.value) - 100).value})
    d.say(f"That transfer didn't go through: your {src} account only has {d.money_words(r['available_balance'])} "
          "available. Would you like to move a smaller amount?")
    smaller = int(r["available_balance"]) // 100 * 100
    d.user(f"oh, okay. make it {d.words(smaller)} dollars then", f"hmm, just do {d.words(smaller)} dollars",
           f"fine, move {d.words(smaller)} dollars instead")
    done = d.call("transfer_funds", {**args, "amount": float(smaller)}, {"status": "completed", "reference": d.code(8).value})
    d.say(f"Done: {d.money_words(smaller)} moved from {src} to {dst}. Your reference is {d.spell(done['reference'][:4])}.")


# -- clinic -------------------------------------------------------------------------------------


@scenario(CLINIC, "no_slots_then_book")
def no_slots_then_book(d: Dialogue) -> None:
    """The wanted provider is full that day; the caller takes the next day or another provider."""
    day, visit, doctor = d.day(14), d.pick("checkup", "follow_up", "sick_visit"), d.pick(*DOCTORS)
    kind = visit.replace("_", " ")
    d.user(f"can I see {_doctor(doctor)} {day} for a {kind}?", f"I'd like a {kind} with {_doctor(doctor)}, {day} if possible")
    d.call("find_appointment_slots", {"date": day.value, "visit_type": visit, "provider": doctor},
           {"slots": [], "provider": doctor, "note": "fully booked"})
    d.say(f"{_doctor(doctor)} is fully booked on {d.date_words(day.value)}. I can check the next day, "
          "or someone else that day. Which would you prefer?")
    slots = sorted({d.clock(8, 16).value for _ in range(3)})
    if d.chance(0.5):
        when, who = days_after(day.value, 1), doctor
        d.user(f"let's try the next day with {_doctor(doctor)}", "the next day is fine", filler=0.3)
        d.call("find_appointment_slots", {"date": when, "visit_type": visit, "provider": doctor}, {"slots": slots, "provider": doctor})
    else:
        when, who = day.value, d.pick(*[x for x in DOCTORS if x != doctor])
        d.user("anyone else that day is fine", "I'll see whoever is free that day", filler=0.3)
        d.call("find_appointment_slots", {"date": when, "visit_type": visit}, {"slots": slots, "provider": who})
    d.say(f"On {d.date_words(when)}, {_doctor(who)} has " + ", ".join(d.time_words(s) for s in slots) + ". Which one?")
    slot, name, dob = d.pick(*slots), d.person(), d.birthday()
    d.user(f"{d.time_words(slot)}. it's {name}, born {dob}", f"I'll take {d.time_words(slot)}. name is {name}, birthday {dob}")
    d.call("book_appointment", {"patient_name": name.value, "date_of_birth": dob.value, "date": when, "time": slot,
                                "visit_type": visit}, {"status": "booked", "provider": who})
    d.say(f"Booked: {name.value.split()[0]} with {_doctor(who)} on {d.date_words(when)} at {d.time_words(slot)}.")


def _child(d: Dialogue, first: str, last: str) -> tuple[Said, Said]:
    born = date(d.rng.randint(2012, 2024), d.rng.randint(1, 12), d.rng.randint(1, 28))
    said = f"{spoken.spoken_date(born.isoformat())} {spoken.year(born.year)}".lower()
    return Said(f"{first} {last}", f"{first}"), Said(born.isoformat(), said)


@scenario(CLINIC, "siblings_back_to_back")
def siblings_back_to_back(d: Dialogue) -> None:
    """One slot search, then two bookings: a parent books two children back to back."""
    day, visit = d.day(21), d.pick("checkup", "vaccination")
    last = d.rng.choice(LAST_NAMES)
    (kid1, dob1), (kid2, dob2) = (_child(d, first, last) for first in d.rng.sample(FIRST_NAMES, 2))
    d.user(f"I need {visit}s for both my kids {day}, back to back if you can",
           f"can I bring my two children in {day}? they both need a {visit}")
    hour = d.rng.randint(8, 15)
    slots = [f"{hour:02d}:00", f"{hour:02d}:30", f"{hour + 1:02d}:15"]
    d.call("find_appointment_slots", {"date": day.value, "visit_type": visit}, {"slots": slots})
    d.say(f"On {d.date_words(day.value)} I can do {d.time_words(slots[0])} and {d.time_words(slots[1])} back to back. "
          "What are the children's names and birthdays?")
    d.user(f"{kid1} {last}, born {dob1}, and {kid2}, born {dob2}",
           f"it's {kid1}, {dob1}, and {kid2}, {dob2}. last name {last}")
    for kid, dob, slot in ((kid1, dob1, slots[0]), (kid2, dob2, slots[1])):
        d.call("book_appointment", {"patient_name": kid.value, "date_of_birth": dob.value, "date": day.value, "time": slot,
                                    "visit_type": visit}, {"status": "booked", "patient": kid.value, "time": slot})
    d.say(f"Both are booked on {d.date_words(day.value)}: {kid1.spoken} at {d.time_words(slots[0])} and "
          f"{kid2.spoken} at {d.time_words(slots[1])}. Please arrive ten minutes early.")


# -- e-commerce ---------------------------------------------------------------------------------


@scenario(SHOP, "order_not_found_recheck")
def order_not_found_recheck(d: Dialogue) -> None:
    """A wrong order number finds nothing; the right one returns items, carrier and dates."""
    wrong, order = d.digits(7), d.digits(7)
    d.user(f"when is my order coming? the number is {wrong}", f"I'm trying to track order {wrong}")
    d.call("get_order_status", {"order_number": wrong.value}, {"status": "not_found"})
    d.say(f"I can't find an order {d.spell(wrong.value)}. Could you check the number? It's the seven digits in your "
          "confirmation email.", "Hmm, that number doesn't match an order. Can you read it to me again?")
    d.user(f"oh, I read the wrong email. it's {order}", f"sorry about that, try {order}", filler=0.3)
    items = d.rng.sample(ITEMS, 2)
    r = d.call("get_order_status", {"order_number": order.value},
               {"status": "in_transit", "items": items, "carrier": d.pick("UPS", "FedEx", "USPS"),
                "shipped_on": d.days_ago(d.rng.randint(1, 3)), "eta": d.day(6).value})
    d.say(f"Found it. Your {r['items'][0]} and {r['items'][1]} shipped {d.date_words(r['shipped_on'])} with "
          f"{r['carrier']} and should arrive {d.date_words(r['eta'])}.")


@scenario(SHOP, "return_two_items")
def return_two_items(d: Dialogue) -> None:
    """The order's items come from a lookup; the caller returns both, or changes their mind and keeps one."""
    order = d.digits(7)
    d.user(f"I got order {order} and there's a problem with what came", f"something's wrong with my delivery, order {order}")
    a, b = d.rng.sample([i for i in ITEMS if not i.endswith("s")], 2)
    prices = [d.money(20, 90).value, d.money(20, 90).value]
    r = d.call("get_order_status", {"order_number": order.value},
               {"status": "delivered", "delivered_on": d.days_ago(d.rng.randint(1, 9)),
                "items": [{"item": a, "price": prices[0]}, {"item": b, "price": prices[1]}], "return_window_days": 30})
    d.say(f"I see it was delivered {d.date_words(r['delivered_on'])}, with {_an(a)} and {_an(b)}. What's the problem?")
    reason, why = d.pick(("not_as_described", "looks nothing like the picture"), ("changed_mind", "isn't what I need after all"))
    d.user(f"the {a} arrived broken and the {b} {why}. can I send both back?",
           f"the {a} is damaged, and the {b} {why}. I want to return both")
    returns = [(a, "damaged", prices[0])]
    if d.chance(0.4):
        d.say(f"Yes, both are within the thirty day window. Should I start returns for the {a} and the {b}?")
        d.user(f"actually, I'll keep the {b}. just the {a}", f"hmm, you know what, I'll keep the {b}. only return the {a}")
    else:
        returns.append((b, reason, prices[1]))
    for item, reason, _ in returns:
        d.call("start_return", {"order_number": order.value, "item": item, "reason": reason},
               {"status": "return_started", "label_sent_to": "email", "refund_days": 5})
    refund = d.money_words(round(sum(p for *_, p in returns), 2))
    what = " and ".join(f"the {item}" for item, *_ in returns)
    d.say(f"Returns started for {what}. I've emailed the labels, and {refund} comes back to you within five days of "
          "receiving them.")
