"""Telecom support callers (technical support): outages, line tests, bills, plans, technicians.

Held out: schedule_technician (the goal; its tool is also called after a line test in train).
The later train goals add a bill read in detail then a cheaper plan, a full technician date,
two outage checks in one call, a line test that finds an outage, an overage with an upgrade
offer, a plan change on a misheard account and a bill still on the old plan."""

from __future__ import annotations

from turnspec.workloads.catalog import domain, load_tools, scenario
from turnspec.workloads.dialogue import Dialogue, days_after
from turnspec.workloads.spoken import Said

TELECOM = domain("telecom", ("Brightline Mobile", "Cascade Fiber", "Metro Connect"), "technical support",
                 load_tools("telecom"))
PLANS = ("basic", "unlimited", "unlimited_plus", "family")
PLAN_PRICES = {"basic": 35.0, "unlimited": 65.0, "unlimited_plus": 85.0, "family": 140.0}


def _plan(plan: str) -> str:
    return plan.replace("_", " ")


# -- first goals (workload 1) -------------------------------------------------------------------


@scenario(TELECOM, "check_outage")
def check_outage(d: Dialogue) -> None:
    zip_code = d.digits(5)
    d.user(f"my internet's been down all morning. is there an outage? zip is {zip_code}",
           f"uh, no signal here, zip code {zip_code}, is something going on?")
    r = d.call("check_outage", {"zip_code": zip_code.value},
               d.pick({"outage": True, "estimated_fix": d.clock(12, 20).value}, {"outage": False}))
    if r["outage"]:
        d.say(f"Yes, there's an outage in your area. We expect it fixed by about {d.time_words(r['estimated_fix'])}.")
    else:
        d.say("I don't see an outage near you. Try restarting your modem; if that doesn't help I can run a line test.")


@scenario(TELECOM, "diagnose_then_technician")
def diagnose_then_technician(d: Dialogue) -> None:
    phone, zip_code, day = d.digits(10), d.digits(5), d.day(10)
    d.user(f"my connection keeps dropping. the number on the account is {phone}",
           f"internet cuts out every few minutes. can you check my line? it's {phone}")
    d.call("run_line_diagnostics", {"phone_number": phone.value}, {"signal": "poor", "fault": "line_noise", "needs_visit": True})
    d.say("The test shows noise on your line, so a technician should take a look. What's your ZIP code, and what day works?")
    window = d.pick("morning", "afternoon")
    d.user(f"{zip_code}, and {day} in the {window}", f"zip {zip_code}. {day}, {window} please")
    d.call("schedule_technician", {"zip_code": zip_code.value, "date": day.value, "window": window},
           {"status": "booked", "arrival": "08:00-12:00" if window == "morning" else "13:00-17:00"})
    d.say(f"A technician is booked for {d.date_words(day.value)} in the {window}. They'll call before arriving.")


@scenario(TELECOM, "bill_question")
def bill_question(d: Dialogue) -> None:
    account = d.digits(9)
    d.user(f"why is my bill so high this month? account {account}", f"I have a question about my bill, account number {account}")
    r = d.call("get_bill_summary", {"account_number": account.value},
               {"total": d.money(60, 220).value, "changes": [{"item": "international roaming", "amount": d.money(10, 60).value}]})
    c = r["changes"][0]
    d.say(f"Your bill is {d.money_words(r['total'])}. The difference is {c['item']}, {d.money_words(c['amount'])}.")


@scenario(TELECOM, "change_plan")
def change_plan(d: Dialogue) -> None:
    account, plan = d.digits(9), d.pick(*PLANS)
    said = plan.replace("_", " ")
    wrong = d.pick(*[p.replace("_", " ") for p in PLANS if p != plan])
    d.user(f"I want to switch to the {d.fix(Said(plan, said), Said(wrong, wrong), 0.3)} plan. account {account}",
           f"can I change my plan to {said}? my account is {account}")
    d.call("change_plan", {"account_number": account.value, "plan": plan}, {"status": "changed", "effective": d.day(30).value})
    d.say(f"You're switched to {said}, starting with your next billing cycle.")


@scenario(TELECOM, "schedule_technician", heldout=True)
def schedule_technician(d: Dialogue) -> None:
    zip_code, day, window = d.digits(5), d.day(14), d.pick("morning", "afternoon")
    d.user(f"I need a technician to install my new modem, {day} {window}, zip {zip_code}",
           f"can someone come out {day}? {window} is best. I'm in {zip_code}")
    d.call("schedule_technician", {"zip_code": zip_code.value, "date": day.value, "window": window}, {"status": "booked"})
    d.say(f"Booked: a technician on {d.date_words(day.value)}, {window} window.")


@scenario(TELECOM, "no_outage_line_test")
def no_outage_line_test(d: Dialogue) -> None:
    zip_code, phone = d.digits(5), d.digits(10)
    d.user(f"my phone has no dial tone. is something down in {zip_code}?", f"no service on my landline, zip {zip_code}")
    d.call("check_outage", {"zip_code": zip_code.value}, {"outage": False})
    d.say("There's no outage near you. What's the phone number on the account? I'll test the line.")
    d.user(f"it's {phone}", f"sure, {phone}", filler=0.3)
    r = d.call("run_line_diagnostics", {"phone_number": phone.value},
               {"signal": "good", "fault": None, "needs_visit": False})
    d.say(f"The line tests {r['signal']} from our side. Try unplugging the phone for a minute; it should come back.")


# -- more train goals (workload 1): retries, changes of mind, several lookups -------------------


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


# -- workload 2 train goals (since=2) -----------------------------------------------------------


@scenario(TELECOM, "outage_home_and_office", since=2)
def outage_home_and_office(d: Dialogue) -> None:
    """Two outage checks in one call (home and a second place); the caller then asks when one
    comes back, answered from the earlier result."""
    home, work, place = d.digits(5), d.digits(5), d.pick("office", "shop", "mom's place")
    d.user(f"my internet is down at home and at my {place} too. home is {home} and the {place} is {work}",
           f"nothing's working at my house or my {place}. zip codes {home} and {work}, is there an outage?")
    down = d.pick((True, False), (False, True), (True, True))
    results = [d.call("check_outage", {"zip_code": z.value},
                      {"outage": True, "cause": d.pick("a fiber cut", "storm damage", "equipment maintenance"),
                       "estimated_fix": d.clock(12, 21).value} if out else {"outage": False})
               for z, out in zip((home, work), down, strict=True)]
    where = ("at home", f"at your {place}")
    parts = [f"there's an outage {w} from {r['cause']}" if r["outage"] else f"there's no outage {w}"
             for w, r in zip(where, results, strict=True)]
    tip = "" if all(down) else " For the one without an outage, try restarting the modem first."
    d.say(f"I checked both: {parts[0]}, and {parts[1]}.{tip}")
    i = d.pick(*[k for k in (0, 1) if down[k]])
    d.user(f"okay. when is the {('home', place)[i]} one supposed to be fixed?",
           f"so how long until it's back {where[i].replace('your', 'my')}?", filler=0.3)
    d.say(f"Crews expect it fixed by about {d.time_words(results[i]['estimated_fix'])}. If it's still down after that, let us know.")


@scenario(TELECOM, "line_test_finds_outage", since=2)
def line_test_finds_outage(d: Dialogue) -> None:
    """The reverse order of a no-outage call: the line test points upstream, the agent asks for
    the ZIP code and finds an outage; the caller asks how widespread it is."""
    phone, zip_code = d.digits(10), d.digits(5)
    d.user(f"both my internet and my home phone just died. the number is {phone}",
           f"can you test my line? everything went dead a few minutes ago. it's {phone}")
    d.call("run_line_diagnostics", {"phone_number": phone.value}, {"signal": "none", "fault": "upstream_no_sync", "needs_visit": False})
    d.say("Your equipment answers our test, but there's no signal coming from our network, which usually means an outage. "
          "What's your ZIP code?")
    d.user(f"it's {zip_code}", f"{zip_code}", filler=0.3)
    r = d.call("check_outage", {"zip_code": zip_code.value},
               {"outage": True, "cause": d.pick("a damaged cable", "a power failure at a hub", "storm damage"),
                "estimated_fix": d.clock(13, 22).value, "affected_customers": d.rng.randint(40, 2500)})
    d.say(f"Yes, there's an outage near you caused by {r['cause']}. It should be fixed by about "
          f"{d.time_words(r['estimated_fix'])}, and you don't need a technician.")
    d.user("is it just my street or the whole neighborhood?", "wow, is it just me?", "how many people are out?", filler=0.3)
    d.say(f"It's not just you: about {d.words(r['affected_customers'])} customers are affected. "
          "Service should come back on its own once it's repaired.")


@scenario(TELECOM, "overage_upgrade_offer", since=2)
def overage_upgrade_offer(d: Dialogue) -> None:
    """A bill with a data overage; the agent offers unlimited and the caller takes it or declines."""
    account, limit = d.digits(9), 8
    used, fee = d.rng.randint(10, 16), d.money(10, 40, cents=False).value
    d.user(f"there's an extra charge on my bill I don't understand. account {account}",
           f"why is my bill higher than usual? my account number is {account}")
    r = d.call("get_bill_summary", {"account_number": account.value},
               {"total": round(PLAN_PRICES["basic"] + fee + 6.5, 2), "plan": "basic", "plan_price": PLAN_PRICES["basic"],
                "overage_charge": fee, "data_used_gb": used, "data_limit_gb": limit, "due_date": d.day(20).value})
    d.say(f"The extra {d.money_words(r['overage_charge'])} is a data overage. You used {d.words(r['data_used_gb'])} gigabytes, "
          f"and your basic plan includes {d.words(r['data_limit_gb'])}. Your total is {d.money_words(r['total'])}, "
          f"due {d.date_words(r['due_date'])}.")
    d.user("would a bigger plan have avoided that?", "is there a plan where that doesn't happen?", filler=0.3)
    d.say(f"Unlimited is {d.money_words(PLAN_PRICES['unlimited'])} a month with no overage charges. Would you like to switch?")
    if d.chance(0.45):
        d.user("no, I'll just watch my data more carefully", "hmm, no thanks, I'll stay on basic", "not right now, thanks")
        d.say(f"No problem, you'll stay on basic. Just keep an eye on the {d.words(limit)} gigabyte limit to avoid the charge.")
        return
    d.user("yeah, let's do unlimited", "okay, switch me to unlimited", filler=0.3)
    c = d.call("change_plan", {"account_number": account.value, "plan": "unlimited"},
               {"status": "changed", "effective": d.day(30).value, "monthly_price": PLAN_PRICES["unlimited"]})
    d.say(f"You're on unlimited from {d.date_words(c['effective'])}, {d.money_words(c['monthly_price'])} a month. "
          "This bill's overage still applies.")


@scenario(TELECOM, "plan_change_account_retry", since=2)
def plan_change_account_retry(d: Dialogue) -> None:
    """The agent asks for the account, the change fails on a misheard number, the caller rereads
    it, and then asks a follow-up answered from the change result."""
    plan = d.pick("family", "unlimited_plus")
    why = "add my kids to my phone plan" if plan == "family" else "get more hotspot data"
    d.user(f"I want to {why}. can you move me to {_plan(plan)}?", f"hi, I'd like to switch to the {_plan(plan)} plan")
    d.say("I can help with that. What's your account number?", "Sure. Can I get your nine digit account number?")
    wrong, account = d.digits(9), d.digits(9)
    d.user(f"{wrong}", f"it's {wrong}", filler=0.3)
    d.call("change_plan", {"account_number": wrong.value, "plan": plan}, {"status": "error", "error": "account_not_found"})
    d.say(f"I couldn't find account {d.spell(wrong.value)}. Could you read it once more? It's at the top of your bill.")
    d.user(f"sorry, it's {account}", f"oh, my mistake. {account}", filler=0.3)
    c = d.call("change_plan", {"account_number": account.value, "plan": plan},
               {"status": "changed", "effective": d.day(30).value, "monthly_price": PLAN_PRICES[plan],
                "lines_included": 4 if plan == "family" else 1, "hotspot_gb": 30 if plan == "family" else 50})
    d.say(f"Done, you're on {_plan(plan)} starting {d.date_words(c['effective'])}, {d.money_words(c['monthly_price'])} a month.")
    if plan == "family":
        d.user("how many lines does that cover?", "and how many phones can be on it?", filler=0.3)
        d.say(f"It includes {d.words(c['lines_included'])} lines, with {d.words(c['hotspot_gb'])} gigabytes of hotspot data shared.")
    else:
        d.user("how much hotspot do I get now?", "and what's the hotspot limit on that?", filler=0.3)
        d.say(f"You get {d.words(c['hotspot_gb'])} gigabytes of hotspot data each month.")


@scenario(TELECOM, "bill_shows_old_plan", since=2)
def bill_shows_old_plan(d: Dialogue) -> None:
    """The caller switched plans but the bill shows the old price: either the change is pending
    (the agent reads its date) or it never went through (the agent applies it now)."""
    account = d.digits(9)
    new, old = d.rng.sample(list(PLANS), 2)
    d.user(f"I switched to {_plan(new)} last month but my bill still shows the old price. account {account}",
           f"my bill says {_plan(old)} but I changed to {_plan(new)}. account number {account}")
    pending = d.chance(0.5)
    start = d.day(25).value
    r = d.call("get_bill_summary", {"account_number": account.value},
               {"total": round(PLAN_PRICES[old] + 9.4, 2), "plan": old, "plan_price": PLAN_PRICES[old],
                "pending_change": {"plan": new, "effective": start, "next_bill_estimate": round(PLAN_PRICES[new] + 9.4, 2)}
                if pending else None})
    if pending:
        p = r["pending_change"]
        d.say(f"Your switch to {_plan(p['plan'])} is on the account, but it starts {d.date_words(p['effective'])}, with your next "
              f"billing cycle. This bill is still {_plan(old)} at {d.money_words(r['plan_price'])}.")
        d.user("so what will next month look like?", "okay, and what should the next bill be?", filler=0.3)
        d.say(f"Your next bill should be about {d.money_words(p['next_bill_estimate'])}, including taxes and fees.")
        return
    d.say(f"I don't see a plan change on the account, so you're still on {_plan(old)}. "
          f"Would you like me to switch you to {_plan(new)} now?")
    d.user("yes please, I thought I did that already", "ugh, yes, do it now", "yes, go ahead", filler=0.3)
    c = d.call("change_plan", {"account_number": account.value, "plan": new},
               {"status": "changed", "effective": start, "monthly_price": PLAN_PRICES[new]})
    d.say(f"Done. You're switched to {_plan(new)}, {d.money_words(c['monthly_price'])} a month, starting "
          f"{d.date_words(c['effective'])}.")

