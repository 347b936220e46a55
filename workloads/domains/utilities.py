"""Utility callers (customer care): outages, bills, payments, starting service.

Held out: payment_plan (set_up_payment_plan is called by no train goal). The later train goals
add a wrong account number retried, a move with two services started, an outage update with a
follow-up, two outages at one address, a declined card then the bank account, an unavailable
start date and a high bill explained."""

from __future__ import annotations

from turnspec.workloads import spoken
from turnspec.workloads.catalog import domain, load_tools, scenario
from turnspec.workloads.dialogue import Dialogue, days_after
from turnspec.workloads.spoken import Said

UTILITIES = domain("utilities", ("Riverside Power & Water", "Valley Gas and Electric", "Lakeshore Utilities"),
                   "customer care", load_tools("utilities"))
NOUN = {"electric": "power", "water": "water", "gas": "gas"}


# -- first goals (workload 1) -------------------------------------------------------------------


@scenario(UTILITIES, "report_outage")
def report_outage(d: Dialogue) -> None:
    address, service = d.address(), d.pick("electric", "water", "gas")
    what = {"electric": "the power's out", "water": "we have no water", "gas": "the gas isn't working"}[service]
    d.user(f"{what} at {address}", f"hi, {what}. the address is {address}", f"um, {what} since this morning, {address}")
    r = d.call("report_outage", {"address": address.value, "service": service},
               {"ticket": d.code(6).value, "known_outage": d.chance(0.5), "estimated_restore": d.clock(13, 22).value})
    known = "There's a known outage in your area; " if r["known_outage"] else "I've opened a ticket; "
    d.say(f"{known}crews expect service back by about {d.time_words(r['estimated_restore'])}. Your ticket is {d.spell(r['ticket'])}.")


@scenario(UTILITIES, "pay_bill")
def pay_bill(d: Dialogue) -> None:
    account = d.digits(8)
    d.user(f"I want to pay my bill. account number {account}", f"can I make a payment? my account is {account}")
    r = d.call("get_account_balance", {"account_number": account.value},
               {"amount_due": d.money(40, 400).value, "due_date": d.day(20).value})
    d.say(f"Your balance is {d.money_words(r['amount_due'])}, due {d.date_words(r['due_date'])}. "
          "Should I charge the card on file or your bank account?")
    method = d.pick("card_on_file", "bank_account")
    d.user("the card on file is fine" if method == "card_on_file" else "take it from my bank account", filler=0.3)
    d.call("make_payment", {"account_number": account.value, "amount": r["amount_due"], "method": method},
           {"status": "paid", "confirmation": d.code(7).value})
    d.say(f"Payment of {d.money_words(r['amount_due'])} is done. Anything else?")


@scenario(UTILITIES, "start_service")
def start_service(d: Dialogue) -> None:
    address, day, service = d.address(), d.day(30), d.pick("electric", "water", "gas")
    d.user(f"I'm moving to {address} and need {service} turned on {day}",
           f"can you start {service} service at {address}, starting {day}?")
    r = d.call("start_service", {"address": address.value, "start_date": day.value, "service": service},
               {"status": "scheduled", "order": d.code(6).value, "deposit": d.pick(0, 50, 100)})
    extra = f" A deposit of {d.money_words(r['deposit'])} will be on your first bill." if r["deposit"] else ""
    d.say(f"You're set: {service} starts at {address.value} on {d.date_words(day.value)}.{extra}")


@scenario(UTILITIES, "payment_plan", heldout=True)
def payment_plan(d: Dialogue) -> None:
    account, months = d.digits(8), d.count(2, 12)
    d.user(f"I'm behind on my bill, can I split it up? account {account}", f"do you do payment plans? my account number is {account}")
    d.say("We can spread an overdue balance over two to twelve months. How many months would you like?")
    d.user(f"{months} months", f"let's do {months} months", f"uh, maybe {months}?")
    r = d.call("set_up_payment_plan", {"account_number": account.value, "months": months.value},
               {"status": "active", "monthly_payment": d.money(20, 150).value})
    d.say(f"Your plan is active: {d.money_words(r['monthly_payment'])} a month for {d.words(months.value)} months.")


@scenario(UTILITIES, "last_payment_check")
def last_payment_check(d: Dialogue) -> None:
    account, paid = d.digits(8), d.money(30, 250)
    d.user(f"did my payment of {paid} go through? account {account}",
           f"I paid {paid} last week and want to make sure it posted. account number {account}")
    r = d.call("get_account_balance", {"account_number": account.value},
               {"amount_due": d.pick(0.0, d.money(10, 90).value), "due_date": d.day(25).value,
                "last_payment": {"amount": paid.value, "status": "posted"}})
    due = d.money_words(r["amount_due"])
    rest = (f" {due[0].upper()}{due[1:]} is still due {d.date_words(r['due_date'])}."
            if r["amount_due"] else " Your balance is zero.")
    d.say(f"Yes, your payment of {d.money_words(r['last_payment']['amount'])} has posted.{rest}")


# -- more train goals (workload 1): retries, changes of mind, several lookups -------------------


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


# -- workload 2 train goals (since=2) -----------------------------------------------------------


@scenario(UTILITIES, "outage_update_callback", since=2)
def outage_update_callback(d: Dialogue) -> None:
    """A caller who already reported an outage wants an update: the agent asks for the address, then answers a follow-up."""
    service, address = d.pick("electric", "water", "gas"), d.address()
    d.user(f"I called earlier about our {NOUN[service]} being out, is there an update?",
           f"we reported a {service} outage this morning and it's still out. any news?")
    d.say("I'm sorry about that. Let me check. What's the service address?", "Sure, I can check on that. What's the address?")
    d.user(f"{address}", f"it's {address}", f"uh, {address}")
    cause = d.pick("a downed line", "a broken main", "equipment failure", "storm damage")
    r = d.call("report_outage", {"address": address.value, "service": service},
               {"ticket": d.code(6).value, "existing_ticket": True, "reported_at": d.clock(6, 10).value,
                "crew_status": d.pick("on site", "on the way"), "estimated_restore": d.clock(13, 22).value,
                "customers_affected": d.rng.randint(12, 900), "cause": cause})
    d.say(f"I found your report from {d.time_words(r['reported_at'])}, ticket {d.spell(r['ticket'])}. A crew is "
          f"{r['crew_status']}, and the estimate to restore is {d.time_words(r['estimated_restore'])}.")
    if d.chance(0.5):
        d.user("is it just my house?", "how many people are out?", filler=0.3)
        d.say(f"It's not just you: {d.words(r['customers_affected'])} customers in your area are affected.")
    else:
        d.user("do you know what caused it?", "what happened, anyway?", filler=0.3)
        d.say(f"It looks like it was caused by {r['cause']}. The crew is working on it now.")


@scenario(UTILITIES, "two_outages_one_address", since=2)
def two_outages_one_address(d: Dialogue) -> None:
    """Two services out at one address (the house number sometimes corrected): two reports back to back, one reply."""
    first, second = d.rng.sample(["electric", "water", "gas"], 2)
    number, street = d.rng.randint(10, 9999), d.pick("Oak Street", "Harbor Road", "Cedar Court", "River Road")
    right = Said(f"{number} {street}", f"{spoken.house_number(number)} {street}")
    wrong_n = number + d.pick(1, 2, 10)
    said = d.fix(right, Said(f"{wrong_n} {street}", f"{spoken.house_number(wrong_n)} {street}"), p=0.35)
    d.user(f"after the storm we've got no {NOUN[first]} and no {NOUN[second]} at {said}",
           f"both our {NOUN[first]} and {NOUN[second]} are out. the address is {said}",
           f"um, we lost {NOUN[first]} and {NOUN[second]} last night, {said}")
    known = d.chance(0.6)
    a = d.call("report_outage", {"address": right.value, "service": first},
               {"ticket": d.code(6).value, "known_outage": known, "estimated_restore": d.clock(12, 20).value})
    b = d.call("report_outage", {"address": right.value, "service": second},
               {"ticket": d.code(6).value, "known_outage": False, "estimated_restore": d.clock(15, 23).value})
    lead = (f"There's a known {NOUN[first]} outage on {street}" if a["known_outage"]
            else f"I've reported the {NOUN[first]} outage, ticket {d.spell(a['ticket'])}")
    d.say(f"{lead}, expected back by {d.time_words(a['estimated_restore'])}. I've also opened a {NOUN[second]} ticket, "
          f"{d.spell(b['ticket'])}, with crews expecting it back by {d.time_words(b['estimated_restore'])}.")


@scenario(UTILITIES, "card_declined_then_bank", since=2)
def card_declined_then_bank(d: Dialogue) -> None:
    """The amount comes first: the card on file is declined, the bank account works, then what is left on the bill."""
    account, amount = d.digits(8), d.money(25, 200)
    d.user(f"I want to pay {amount} on account {account}, with my card on file",
           f"can you put {amount} on my card on file? account number {account}")
    reason = d.pick("card_expired", "declined_by_issuer")
    r = d.call("make_payment", {"account_number": account.value, "amount": amount.value, "method": "card_on_file"},
               {"status": "failed", "reason": reason, "card_last_four": d.digits(4).value})
    why = "has expired" if r["reason"] == "card_expired" else "was declined by your card issuer"
    d.say(f"I'm sorry, the card on file ending in {d.spell(r['card_last_four'])} {why}, so the payment didn't go "
          "through. Would you like to pay from your bank account instead?")
    d.user("yeah, use the bank account", "okay, take it from my bank account then", "ugh, fine, bank account", filler=0.3)
    p = d.call("make_payment", {"account_number": account.value, "amount": amount.value, "method": "bank_account"},
               {"status": "paid", "confirmation": d.code(7).value})
    d.say(f"That worked: {d.money_words(amount.value)} from your bank account, confirmation {d.spell(p['confirmation'])}.")
    d.user("how much do I still owe after that?", "is there anything left on the bill now?", filler=0.3)
    left = d.pick(0.0, d.money(10, 120).value)
    b = d.call("get_account_balance", {"account_number": account.value}, {"amount_due": left, "due_date": d.day(20).value})
    d.say(f"You still owe {d.money_words(b['amount_due'])}, due {d.date_words(b['due_date'])}." if b["amount_due"]
          else "Nothing, your balance is now zero.")


@scenario(UTILITIES, "start_date_unavailable", since=2)
def start_date_unavailable(d: Dialogue) -> None:
    """No details at first: the agent asks for address and date; that date is unavailable and the caller takes another."""
    service, address, day = d.pick("gas", "electric", "water"), d.address(), d.day(10)
    d.user(f"I need to get {service} set up at my new apartment", f"hi, I'm moving and need to start {service} service")
    d.say("I can help with that. What's the new address, and what day should it start?")
    d.user(f"{address}, and {day}", f"it's {address}. I'd like it to start {day}", f"{address}, starting {day} if possible")
    args = {"address": address.value, "start_date": day.value, "service": service}
    reason = "technician_visit_required" if service == "gas" else "fully_booked"
    r = d.call("start_service", args, {"status": "unavailable", "reason": reason, "earliest_date": days_after(day.value, d.pick(2, 3, 4))})
    why = "gas needs a technician visit to turn on" if reason == "technician_visit_required" else "we're fully booked that day"
    d.say(f"I'm sorry, {d.date_words(day.value)} isn't available because {why}. The earliest date is "
          f"{d.date_words(r['earliest_date'])}. Would that work, or is there another day you'd like?")
    when = r["earliest_date"]
    if d.chance(0.5):
        d.user("okay, the earliest one then", "fine, I'll take that", filler=0.3)
    else:
        when = days_after(when, d.pick(1, 2, 3))
        d.user(f"hmm, I'm working then. how about {spoken.spoken_date(when).lower()}?", f"can we do {spoken.spoken_date(when).lower()} instead?")
    s = d.call("start_service", {**args, "start_date": when}, {"status": "scheduled", "order": d.code(6).value, "deposit": d.pick(0, 0, 75)})
    extra = f" A deposit of {d.money_words(s['deposit'])} will be on your first bill." if s["deposit"] else ""
    d.say(f"You're set: {service} starts at {address.value} on {d.date_words(when)}, order {d.spell(s['order'])}.{extra}")


@scenario(UTILITIES, "high_bill_explained", since=2)
def high_bill_explained(d: Dialogue) -> None:
    """Why is the bill high? One lookup with usage fields is explained; the caller usually declines paying now."""
    account = d.digits(8)
    d.user(f"my bill is way higher than usual, can you tell me why? account {account}",
           f"why did my bill go up so much this month? my account number is {account}")
    prev, usage = d.money(60, 140), d.rng.randint(500, 1600)
    r = d.call("get_account_balance", {"account_number": account.value},
               {"amount_due": round(prev.value + d.money(40, 160).value, 2), "due_date": d.day(20).value,
                "previous_bill": prev.value, "usage_kwh": usage, "previous_usage_kwh": usage - d.rng.randint(150, 450),
                "estimated_read": d.chance(0.4)})
    est = " This bill used an estimated meter reading, so it may be corrected after the next actual read." if r["estimated_read"] else ""
    d.say(f"This bill is {d.money_words(r['amount_due'])}, up from {d.money_words(r['previous_bill'])} last time. You used "
          f"{d.words(r['usage_kwh'])} kilowatt hours, compared with {d.words(r['previous_usage_kwh'])} before.{est} "
          "Would you like to pay it now?")
    if d.chance(0.65):
        d.user("no, not today. I'll pay closer to the due date", "no thanks, I'll wait till payday", filler=0.3)
        d.say(f"No problem. Just make sure it's paid by {d.date_words(r['due_date'])}.")
        return
    method = d.pick("card_on_file", "bank_account")
    d.user("sure, use the card on file" if method == "card_on_file" else "okay, take it from my bank account", filler=0.3)
    p = d.call("make_payment", {"account_number": account.value, "amount": r["amount_due"], "method": method},
               {"status": "paid", "confirmation": d.code(7).value})
    d.say(f"Payment of {d.money_words(r['amount_due'])} is done, confirmation {d.spell(p['confirmation'])}.")

