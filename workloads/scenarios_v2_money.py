"""Workload version 2 train scenarios for the bank and utilities domains (since=2).

Ten new caller goals, five per domain, with flows the version-1 scripts lack: a verification
that fails once and is retried, an amount the agent must ask for and derive from a balance, a
pending hold read against a posted charge, a search that is widened after finding nothing, two
lookups before one reply, a follow-up question answered from an earlier result, a declined card
then another method, a start date that is unavailable, and a caller who declines an offer. They
call only tools the domains' train scenarios already call (never report_lost_card or
set_up_payment_plan, which stay reserved for held-out goals).
"""

from __future__ import annotations

from datetime import timedelta

from turnspec.workloads import spoken
from turnspec.workloads.catalog import scenario
from turnspec.workloads.dialogue import Dialogue, days_after
from turnspec.workloads.domains_money import BANK, UTILITIES, _verify
from turnspec.workloads.spoken import Said

EMPLOYERS = ("Acme Logistics", "Riverside School District", "Northwind Health", "Bluebird Cafe", "Metro Transit")
SHOPS = ("Corner Market", "Shell", "Netflix", "City Parking", "Blue Bottle Coffee", "Target", "Walgreens")
NOUN = {"electric": "power", "water": "water", "gas": "gas"}


def _pct(rate: float) -> str:
    whole, _, frac = f"{rate:g}".partition(".")
    return spoken.words(int(whole)) + (" point " + " ".join(spoken.words(int(c)) for c in frac) if frac else "") + " percent"


def _shops(d: Dialogue, n: int, within: int) -> list[dict]:
    return [{"merchant": s, "amount": d.money(3, 90).value, "date": d.days_ago(d.rng.randint(0, within)), "type": "purchase"}
            for s in d.rng.sample(SHOPS, n)]


def _verify_retry(d: Dialogue) -> None:
    """Verification; half the time the caller first gives the card's last four, which fails."""
    last4, dob = d.digits(4), d.birthday()
    if not d.chance(0.5):
        _verify(d)
        return
    card = d.digits(4)
    d.say("Sure. First, can I get the last four digits of your account and your date of birth?")
    d.user(f"the last four are {card}, and my birthday is {dob}", f"{card}, born {dob}")
    d.call("verify_identity", {"account_last_four": card.value, "date_of_birth": dob.value},
           {"verified": False, "reason": "details_do_not_match"})
    d.say("I'm sorry, those details don't match our records. Is that the last four of your card, maybe? "
          "I need the last four of the account number, which is on your statement.")
    d.user(f"oh, yeah, that was the card. the account ends in {last4}", f"sorry, my mistake. account ends {last4}", filler=0.3)
    d.call("verify_identity", {"account_last_four": last4.value, "date_of_birth": dob.value}, {"verified": True})


# -- bank ---------------------------------------------------------------------------------------


@scenario(BANK, "paycheck_arrived", since=2)
def paycheck_arrived(d: Dialogue) -> None:
    """Did the direct deposit land? Verification may fail once; a short lookup finds it posted, pending or absent."""
    employer, days = d.pick(*EMPLOYERS), d.pick(2, 3, 5)
    d.user("has my paycheck hit my checking yet?", "I'm checking if my direct deposit came into checking",
           "did my pay get deposited to my checking account? it's usually there by now")
    _verify_retry(d)
    pay, state = d.money(600, 3200), d.pick("posted", "posted", "pending", "none")
    deposit = {"merchant": f"Direct deposit {employer}", "amount": pay.value, "date": d.days_ago(d.rng.randint(0, 1)),
               "type": "deposit", "status": state}
    if state == "pending":
        deposit["available_on"] = days_after(d.today.isoformat(), 1)
    r = d.call("list_transactions", {"account": "checking", "days": days},
               {"transactions": _shops(d, 2, days - 1) + ([deposit] if state != "none" else [])})
    if state == "none":
        seen = r["transactions"]
        d.say(f"Thanks, you're verified. I don't see any deposit in the last {d.words(days)} days, only {seen[0]['merchant']} "
              f"and {seen[1]['merchant']}. It may be worth checking the pay date with your employer.")
        return
    dep = r["transactions"][-1]
    if state == "pending":
        d.say(f"Thanks, you're verified. Your deposit from {employer} for {d.money_words(dep['amount'])} is pending "
              f"and will be available {d.date_words(dep['available_on'])}.")
        return
    d.say(f"Thanks, you're verified. Yes, {d.money_words(dep['amount'])} from {employer} posted on "
          f"{d.date_words(dep['date'])}.")
    d.user("great, so what's my checking balance now?", "nice. and how much is in checking with that?", filler=0.3)
    b = d.call("get_balance", {"account": "checking"},
               {"account": "checking", "balance": round(dep["amount"] + d.money(10, 900).value, 2), "currency": "USD"})
    d.say(f"With that deposit, your checking balance is {d.money_words(b['balance'])}.")


@scenario(BANK, "move_part_of_checking", since=2)
def move_part_of_checking(d: Dialogue) -> None:
    """No amount given: the agent asks; the caller wants half, or all but a cushion, so a balance lookup comes first."""
    d.user("I want to move some money over to savings", "can you put some of my checking into savings?",
           "I'd like to transfer from checking to savings")
    _verify(d)
    d.say("Thanks, you're verified. How much would you like to move from checking to savings?")
    half, cushion = d.chance(0.5), d.money(200, 500, cents=False)
    if half:
        d.user("half of whatever's in checking", "half my checking balance, I guess", "let's say half of it")
    else:
        d.user(f"everything except {cushion}, I want to keep that for bills", f"leave {cushion} in checking and move the rest")
    r = d.call("get_balance", {"account": "checking"}, {"account": "checking", "balance": d.money(700, 6000).value, "currency": "USD"})
    amount = round(r["balance"] / 2, 2) if half else round(r["balance"] - cushion.value, 2)
    part = "half is" if half else f"leaving {d.money_words(cushion.value)} means moving"
    d.say(f"Checking has {d.money_words(r['balance'])}, so {part} {d.money_words(amount)}. Should I go ahead?")
    if d.chance(0.4):
        amount = float(int(amount) // 100 * 100)
        d.user(f"hmm, just round it down to {d.words(int(amount))} dollars", f"make it an even {d.words(int(amount))} dollars")
    else:
        d.user("yes, go ahead", "yep, do it", "sounds good", filler=0.3)
    t = d.call("transfer_funds", {"from_account": "checking", "to_account": "savings", "amount": amount},
               {"status": "completed", "reference": d.code(8).value, "new_checking_balance": round(r["balance"] - amount, 2)})
    d.say(f"Done: {d.money_words(amount)} moved to savings. Checking now has {d.money_words(t['new_checking_balance'])}. "
          f"Reference {d.spell(t['reference'][:4])}.")


@scenario(BANK, "pending_double_charge", since=2)
def pending_double_charge(d: Dialogue) -> None:
    """Charged twice? The lookup shows a pending hold beside the posted charge, or a real duplicate; an offer is declined."""
    merchant, amount = d.pick("Shell", "Hilton Garden Inn", "Uber Eats", "Chevron", "Target"), d.money(15, 180)
    d.user(f"I think {merchant} charged me twice, {amount} both times", f"there are two {merchant} charges on my checking, can you look?",
           f"why do I have a double charge from {merchant}? it's {amount}")
    _verify(d)
    when, dupe = d.days_ago(d.rng.randint(0, 3)), d.chance(0.35)
    second = {"merchant": merchant, "amount": amount.value, "date": when, "status": "posted" if dupe else "pending"}
    if not dupe:
        second["drops_off_by"] = days_after(when, d.pick(3, 5))
    r = d.call("list_transactions", {"account": "checking", "days": d.pick(7, 10, 14)},
               {"transactions": [{"merchant": merchant, "amount": amount.value, "date": when, "status": "posted"}, second,
                                 *_shops(d, 1, 6)]})
    p = r["transactions"][1]
    say = f"Thanks, you're verified. I see two {merchant} charges of {d.money_words(amount.value)} on {d.date_words(when)}. "
    if dupe:
        d.say(say + "Both have posted, so it does look like a duplicate. Would you like me to connect you with our team "
                    "to dispute it?")
        d.user("no, I'll call the store first", "not yet, let me ask the merchant to refund it", filler=0.3)
        d.say("That makes sense. If they can't fix it, call us back and we'll open a dispute.")
        return
    d.say(say + f"One has posted and the other is only a pending hold, which should drop off by {d.date_words(p['drops_off_by'])}.")
    if d.chance(0.5):
        d.user("so I'm not paying twice?", "okay so that money comes back?", filler=0.3)
        d.say(f"Right, you'll only pay the posted {d.money_words(amount.value)}. The hold just goes away on its own.")
    else:
        d.user("and what if it doesn't go away by then?", "what if it's still there next week?", filler=0.3)
        d.say(f"If the hold is still there after {d.date_words(p['drops_off_by'])}, call us and we'll open a dispute.")


@scenario(BANK, "savings_interest_and_rate", since=2)
def savings_interest_and_rate(d: Dialogue) -> None:
    """Savings balance and the last interest credit, two lookups in a row; the rate follow-up is read from the first."""
    d.user("how much interest did my savings earn last month?", "can you tell me my savings balance and my last interest payment?",
           "I want to see what my savings account is earning")
    _verify(d)
    apy = d.pick(0.5, 2.5, 3.75, 4.1, 4.25)
    b = d.call("get_balance", {"account": "savings"},
               {"account": "savings", "balance": d.money(1500, 9500).value, "currency": "USD", "apy": apy})
    credited = (d.today.replace(day=1) - timedelta(days=1)).isoformat()
    interest = {"merchant": "Interest payment", "amount": round(b["balance"] * apy / 1200, 2), "date": credited, "type": "deposit"}
    r = d.call("list_transactions", {"account": "savings", "days": 31}, {"transactions": [interest]})
    i = r["transactions"][0]
    d.say(f"Thanks, you're verified. Your savings balance is {d.money_words(b['balance'])}, and the last interest payment "
          f"was {d.money_words(i['amount'])} on {d.date_words(i['date'])}.")
    d.user("and what rate am I getting on that?", "what's the interest rate on my savings?", "is that a good rate? what is it?")
    d.say(f"Your savings account earns {_pct(b['apy'])} APY, paid monthly.")


@scenario(BANK, "find_older_charge", since=2)
def find_older_charge(d: Dialogue) -> None:
    """A subscription isn't in the last thirty days; the caller agrees to search back ninety days, where it turns up."""
    merchant = d.pick("Planet Fitness", "Adobe", "Costco Membership", "Amazon Prime", "Hulu", "Geico")
    d.user(f"when did {merchant} last charge me, and how much?", f"I'm trying to find my last {merchant} payment on checking",
           f"can you tell me when my {merchant} payment came out?")
    _verify(d)
    r = d.call("list_transactions", {"account": "checking", "days": 30}, {"transactions": _shops(d, 2, 29)})
    seen = r["transactions"]
    d.say(f"Thanks, you're verified. I don't see {merchant} in the last thirty days, only {seen[0]['merchant']} and "
          f"{seen[1]['merchant']}. Would you like me to look back ninety days?")
    d.user("yes, go back as far as you can", "sure, check the last three months", "yeah please", filler=0.3)
    charge = {"merchant": merchant, "amount": d.money(10, 140).value, "date": d.days_ago(d.rng.randint(35, 85)), "type": "purchase"}
    r = d.call("list_transactions", {"account": "checking", "days": 90}, {"transactions": [charge, *_shops(d, 1, 89)]})
    c = r["transactions"][0]
    d.say(f"Found it: {merchant} charged {d.money_words(c['amount'])} on {d.date_words(c['date'])}. "
          "It's the only one in the last ninety days.")


# -- utilities ----------------------------------------------------------------------------------


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
