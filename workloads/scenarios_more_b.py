"""More train scenarios for the restaurant, ride-hailing, telecom and utilities domains.

They exist to give the train split more caller goals, so a drafter trained on the target's
answers must generalise rather than memorise a few scripts: lookups that fail and are retried,
two lookups before an action, callers who change their mind, and replies that read several
fields of one tool result. They call only tools that the domains' other train scenarios call;
the tools reserved for held-out goals (modify_reservation, report_lost_item,
set_up_payment_plan) stay out.
"""

from __future__ import annotations

from turnspec.workloads.catalog import scenario
from turnspec.workloads.dialogue import Dialogue, days_after
from turnspec.workloads.domains_care import TELECOM
from turnspec.workloads.domains_commerce import PLACES, RIDES
from turnspec.workloads.domains_hospitality import RESTAURANT
from turnspec.workloads.domains_money import UTILITIES

PRICES = {"margherita pizza": 16.0, "spaghetti carbonara": 18.5, "chicken parmesan": 21.0, "caesar salad": 11.5,
          "garlic bread": 6.0, "mushroom risotto": 19.0, "tiramisu": 8.5, "pork dumplings": 9.5}
PLAN_PRICES = {"basic": 35.0, "unlimited": 65.0, "unlimited_plus": 85.0, "family": 140.0}


def _dishes(d: Dialogue, items: list[dict]) -> str:
    return " and ".join(f"{d.words(i['quantity'])} {i['dish']}" for i in items)


# -- restaurant ---------------------------------------------------------------------------------


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


# -- ride hailing -------------------------------------------------------------------------------


@scenario(RIDES, "compare_car_types")
def compare_car_types(d: Dialogue) -> None:
    """Two fare estimates, then the caller picks one (sometimes changing their mind) and books it."""
    pickup, dest = d.address(), d.pick(*PLACES)
    d.user(f"how much more is a comfort ride than a standard from {pickup} to {dest}?",
           f"can you price a standard and a comfort car from {pickup} to {dest}?")
    low = d.money(14, 30, cents=False).value
    route = {"pickup": pickup.value, "destination": dest}
    std = d.call("get_fare_estimate", {**route, "ride_type": "standard"}, {"low": low, "high": low + 8, "minutes": d.pick(15, 20, 28)})
    com = d.call("get_fare_estimate", {**route, "ride_type": "comfort"},
                 {"low": low + 9, "high": low + 19, "minutes": std["minutes"]})
    d.say(f"Standard is {d.money_words(std['low'])} to {d.money_words(std['high'])}, comfort is {d.money_words(com['low'])} "
          f"to {d.money_words(com['high'])}; both about {d.words(std['minutes'])} minutes. Which would you like?")
    kind = d.pick("standard", "comfort")
    other = "comfort" if kind == "standard" else "standard"
    d.user(f"{kind}, please", f"let's do {other}... no, {kind} is fine", f"I'll take the {kind}", filler=0.3)
    ride = d.call("request_ride", {**route, "ride_type": kind, "passengers": 1},
                  {"ride_id": "R" + d.code(6).value, "driver": d.person().value.split()[0],
                   "car": d.pick("black Honda Accord", "white Tesla Model 3", "blue Hyundai Sonata"), "eta_minutes": d.pick(3, 6, 9)})
    d.say(f"Booked a {kind} car. {ride['driver']} in a {ride['car']} will be there in {d.words(ride['eta_minutes'])} minutes.")


@scenario(RIDES, "wrong_pickup_rebook")
def wrong_pickup_rebook(d: Dialogue) -> None:
    """The ETA lookup shows the wrong pickup; the ride is cancelled and booked again from the right one."""
    ride_id, wrong, right, dest = "R" + d.code(6).value, d.address(), d.address(), d.pick(*PLACES)
    d.user(f"I think my driver is going to the wrong place. ride {d.spell(ride_id)}",
           f"my ride {d.spell(ride_id)} looks like it's headed somewhere else")
    r = d.call("get_driver_eta", {"ride_id": ride_id},
               {"eta_minutes": d.pick(4, 7, 11), "driver": d.person().value.split()[0], "pickup": wrong.value,
                "destination": dest, "ride_type": d.pick("standard", "comfort"), "passengers": d.pick(1, 2)})
    d.say(f"{r['driver']} is heading to {r['pickup']}, about {d.words(r['eta_minutes'])} minutes away. Is that the wrong address?")
    d.user(f"yes! I'm at {right}", f"that's wrong, I'm at {right}", f"no, the pickup should be {right}")
    d.say(f"I can't change the pickup on an active ride, but I can cancel it at no charge and book a new car from "
          f"{right.value} to {dest}. Should I do that?")
    d.user("yes, please", "okay, go ahead", "sure, do it", filler=0.3)
    d.call("cancel_ride", {"ride_id": ride_id, "reason": "wrong_pickup"}, {"status": "cancelled", "fee": 0})
    new = d.call("request_ride", {"pickup": right.value, "destination": dest, "ride_type": r["ride_type"],
                                  "passengers": r["passengers"]},
                 {"ride_id": "R" + d.code(6).value, "driver": d.person().value.split()[0], "eta_minutes": d.pick(3, 5, 8)})
    d.say(f"Done. The old ride is cancelled with no fee, and {new['driver']} is coming to {right.value} in about "
          f"{d.words(new['eta_minutes'])} minutes. Your new ride is {d.spell(new['ride_id'])}.")


# -- telecom ------------------------------------------------------------------------------------


@scenario(TELECOM, "bill_then_cheaper_plan")
def bill_then_cheaper_plan(d: Dialogue) -> None:
    """A bill summary with several fields, then a switch to a cheaper plan (sometimes after a change of mind)."""
    account = d.digits(9)
    d.user(f"my bill is too high. what am I paying for? account {account}", f"can you go over my bill with me? account number {account}")
    used, current = d.rng.randint(2, 6), d.pick("unlimited_plus", "unlimited")
    fees = d.money(8, 20).value
    r = d.call("get_bill_summary", {"account_number": account.value},
               {"total": round(PLAN_PRICES[current] + fees, 2), "plan": current, "plan_price": PLAN_PRICES[current],
                "taxes_and_fees": fees, "data_used_gb": used, "due_date": d.day(20).value})
    d.say(f"Your bill is {d.money_words(r['total'])}, due {d.date_words(r['due_date'])}. That's the "
          f"{current.replace('_', ' ')} plan, {d.money_words(r['plan_price'])}, plus {d.money_words(r['taxes_and_fees'])} "
          f"in taxes and fees. You used {d.words(used)} gigabytes of data this month.")
    d.user("is there anything cheaper?", "do you have a cheaper plan? I barely use data")
    basic = f"Basic is {d.money_words(PLAN_PRICES['basic'])} a month with eight gigabytes"
    if current == "unlimited":
        plan = "basic"
        d.say(f"{basic}, which covers what you use. Would you like to switch?")
        d.user("yes, switch me to basic", "basic sounds good", filler=0.3)
    else:
        d.say(f"{basic}, and unlimited is {d.money_words(PLAN_PRICES['unlimited'])}. Would you like to switch?")
        plan = d.pick("basic", "unlimited")
        other = "unlimited" if plan == "basic" else "basic"
        d.user(f"let's do {other}. hmm, actually, no, make it {plan}", f"{other}... wait, no, {plan} instead",
               f"switch me to {plan}", f"{plan} sounds good")
    c = d.call("change_plan", {"account_number": account.value, "plan": plan},
               {"status": "changed", "effective": d.day(30).value, "monthly_price": PLAN_PRICES[plan]})
    d.say(f"You're switched to {plan}, {d.money_words(c['monthly_price'])} a month, starting {d.date_words(c['effective'])}.")


@scenario(TELECOM, "technician_date_full")
def technician_date_full(d: Dialogue) -> None:
    """A line test, then the requested technician date is full and the caller takes the next opening."""
    phone, zip_code, day, window = d.digits(10), d.digits(5), d.day(10), d.pick("morning", "afternoon")
    d.user(f"my modem has been blinking red since yesterday. the number on the account is {phone}",
           f"internet's completely dead at home. can you test my line? it's {phone}")
    d.call("run_line_diagnostics", {"phone_number": phone.value},
           {"signal": "none", "fault": "modem_offline", "needs_visit": True})
    d.say("Your modem isn't responding to our test, so a technician needs to come out. What's your ZIP code, and which day?")
    d.user(f"{zip_code}. {day} in the {window}", f"zip is {zip_code}, and {day}, {window} if possible")
    later = days_after(day.value, d.pick(1, 2, 3))
    d.call("schedule_technician", {"zip_code": zip_code.value, "date": day.value, "window": window},
           {"status": "unavailable", "next_open": later, "windows": [window]})
    d.say(f"{d.date_words(day.value)} is full in your area. The next opening is {d.date_words(later)} in the {window}. "
          "Would that work?")
    d.user("fine, book that", "okay, I'll take it", "sure, that works", filler=0.3)
    arrival = "08:00" if window == "morning" else "13:00"
    r = d.call("schedule_technician", {"zip_code": zip_code.value, "date": later, "window": window},
               {"status": "booked", "arrival_start": arrival, "arrival_end": "12:00" if window == "morning" else "17:00"})
    d.say(f"You're booked for {d.date_words(later)}. The technician arrives between {d.time_words(r['arrival_start'])} "
          f"and {d.time_words(r['arrival_end'])}.")


# -- utilities ----------------------------------------------------------------------------------


@scenario(UTILITIES, "account_recheck_then_pay")
def account_recheck_then_pay(d: Dialogue) -> None:
    """A wrong account number finds nothing; the right one shows the balance and the caller picks an amount."""
    wrong, account, amount = d.digits(8), d.digits(8), d.money(20, 90, cents=False)
    d.user(f"I want to pay {amount} on my account, {wrong}", f"can I make a payment of {amount}? account {wrong}")
    d.call("get_account_balance", {"account_number": wrong.value}, {"error": "account_not_found"})
    d.say(f"I can't find account {d.spell(wrong.value)}. Could you read it again? It's the eight digits at the top of your bill.")
    d.user(f"sorry, it's {account}", f"oops, wrong one. it's {account}", filler=0.3)
    r = d.call("get_account_balance", {"account_number": account.value},
               {"amount_due": d.money(int(amount.value) + 30, 400).value, "due_date": d.day(20).value,
                "service_address": d.address().value, "autopay": False})
    d.say(f"Found it, the account at {r['service_address']}. The balance is {d.money_words(r['amount_due'])}, due "
          f"{d.date_words(r['due_date'])}. Should I put {d.money_words(amount.value)} toward it, or pay it all?")
    full = d.chance(0.5)
    paid = r["amount_due"] if full else amount.value
    method = d.pick("card_on_file", "bank_account")
    how = "the card on file" if method == "card_on_file" else "my bank account"
    d.user(f"oh, just pay the whole thing, from {how}" if full else f"just the {amount} for now, from {how}", filler=0.3)
    p = d.call("make_payment", {"account_number": account.value, "amount": paid, "method": method},
               {"status": "paid", "confirmation": d.code(7).value, "remaining": round(r["amount_due"] - paid, 2)})
    rest = f" {d.money_words(p['remaining']).capitalize()} is still due." if p["remaining"] else " Your balance is now zero."
    d.say(f"Payment of {d.money_words(paid)} is done, confirmation {d.spell(p['confirmation'])}.{rest}")


@scenario(UTILITIES, "moving_check_and_start")
def moving_check_and_start(d: Dialogue) -> None:
    """Combined request: the old account's balance, then two services started at the new address."""
    account, address, day = d.digits(8), d.address(), d.day(30)
    first, second = d.rng.sample(["electric", "water", "gas"], 2)
    d.user(f"I'm moving soon. what do I still owe on account {account}? and I need {first} and {second} at my new place",
           f"two things: how much is left on account {account}, and can you set up {first} and {second} where I'm moving?")
    r = d.call("get_account_balance", {"account_number": account.value},
               {"amount_due": d.money(30, 250).value, "due_date": d.day(20).value, "service_address": d.address().value})
    d.say(f"Your account at {r['service_address']} has {d.money_words(r['amount_due'])} due {d.date_words(r['due_date'])}. "
          "What's the new address, and when should service start?")
    d.user(f"{address}, starting {day}", f"it's {address}. {day}, please")
    orders = [d.call("start_service", {"address": address.value, "start_date": day.value, "service": service},
                     {"status": "scheduled", "order": d.code(6).value, "deposit": d.pick(0, 0, 50)})
              for service in (first, second)]
    deposit = sum(o["deposit"] for o in orders)
    extra = f" A deposit of {d.money_words(deposit)} will be on your first bill." if deposit else ""
    d.say(f"You're set: {first} and {second} start at {address.value} on {d.date_words(day.value)}.{extra}")
