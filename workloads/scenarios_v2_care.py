"""Workload version 2 train scenarios (since=2): five new caller goals each for clinic and telecom.

Flows the older scenarios lack: a slot search before a reschedule, a cancel on the wrong day,
a slot taken between search and booking, a cancel then a different visit, slots read by
provider; two outage checks in one call, a line test that points to an outage, an overage with
an upgrade the caller may decline, a plan change on a misheard account, a bill still on the old
plan. Only tools that train scenarios already call (never request_prescription_refill).
"""

from __future__ import annotations

from datetime import date

from turnspec.workloads import spoken
from turnspec.workloads.catalog import scenario
from turnspec.workloads.dialogue import FIRST_NAMES, Dialogue, days_after
from turnspec.workloads.domains_care import CLINIC, DOCTORS, PLANS, TELECOM
from turnspec.workloads.scenarios_more_b import PLAN_PRICES
from turnspec.workloads.spoken import Said

KINDS = {"checkup": "checkup", "sick_visit": "sick visit", "follow_up": "follow up", "vaccination": "vaccination"}


def _doctor(name: str) -> str:
    return name.replace("dr_", "doctor ").title()


def _slots(d: Dialogue, n: int, first: int, last: int) -> list[str]:
    """n distinct quarter-hour times between first:00 and last:45, sorted."""
    return sorted(d.rng.sample([f"{h:02d}:{m:02d}" for h in range(first, last + 1) for m in (0, 15, 30, 45)], n))


def _times(d: Dialogue, slots: list[str]) -> str:
    return ", ".join(d.time_words(s) for s in slots[:-1]) + " and " + d.time_words(slots[-1])


def _asked(name: str) -> str:
    """How a caller says a provider: "doctor Alvarez"."""
    return "doctor " + name[3:].title()


def _heard(d: Dialogue, slot: str) -> str:
    """A slot time as a caller repeats it, with or without the am / pm."""
    said = d.time_words(slot)
    return said.rsplit(" ", 1)[0] if d.chance(0.5) else said


def _plan(plan: str) -> str:
    return plan.replace("_", " ")


# -- clinic -------------------------------------------------------------------------------------


@scenario(CLINIC, "check_then_reschedule", since=2)
def check_then_reschedule(d: Dialogue) -> None:
    """The caller checks a provider's openings on the new day first (the agent asks the visit
    type), then moves the visit to one of them and asks how long it takes."""
    doctor, day = d.pick(*DOCTORS), d.day(21)
    d.user(f"I need to move my appointment with {_asked(doctor)}. what do they have open {d.fix(day, d.day(21))}?",
           f"before I reschedule, can you tell me when {_asked(doctor)} is free {day}?")
    d.say("Sure. What kind of visit is it, a checkup, a follow up, or a sick visit?",
          "I can check that. Is it a checkup, a follow up, or a sick visit?")
    visit = d.pick("checkup", "follow_up", "sick_visit")
    d.user(f"it's a {KINDS[visit]}", f"a {KINDS[visit]}", f"uh, {KINDS[visit]} I think", filler=0.3)
    slots = _slots(d, 3, 8, 16)
    r = d.call("find_appointment_slots", {"date": day.value, "visit_type": visit, "provider": doctor},
               {"provider": doctor, "slots": slots, "duration_minutes": d.pick(20, 30, 40)})
    d.say(f"{_doctor(doctor)} has {_times(d, slots)} on {d.date_words(day.value)}. Should I move you to one of those?")
    slot, name, dob = d.pick(*slots), d.person(), d.birthday()
    d.user(f"yes, {_heard(d, slot)}. I'm {name}, born {dob}", f"let's do {_heard(d, slot)}. name is {name}, date of birth {dob}")
    off = d.pick(-2, -1, 1, 3, 5)
    old = days_after(day.value, off if days_after(day.value, off) > d.today.isoformat() else -off)
    m = d.call("reschedule_appointment", {"patient_name": name.value, "date_of_birth": dob.value, "new_date": day.value,
                                          "new_time": slot}, {"status": "rescheduled", "previous_date": old, "provider": doctor})
    d.say(f"Done, I moved your visit from {d.date_words(m['previous_date'])} to {d.date_words(day.value)} at "
          f"{d.time_words(slot)} with {_doctor(m['provider'])}.")
    d.user("and how long will it take? I have to get back to work", "how long is the appointment, roughly?", filler=0.3)
    d.say(f"It's booked as a {d.words(r['duration_minutes'])} minute {KINDS[visit]}, so plan for a little more with check in.")


@scenario(CLINIC, "cancel_wrong_date_retry", since=2)
def cancel_wrong_date_retry(d: Dialogue) -> None:
    """A cancel on the wrong day finds nothing; the agent reads the real appointment from the
    result, cancels that one, and the caller declines to rebook."""
    name, dob, wrong = d.person(), d.birthday(), d.day(14)
    real, visit, time = days_after(wrong.value, d.pick(1, 2, 7)), d.pick(*KINDS), d.clock(8, 16)
    d.user(f"I need to cancel my appointment {wrong}. it's {name}, born {dob}",
           f"please cancel my visit {wrong}, name {name}, birthday {dob}")
    args = {"patient_name": name.value, "date_of_birth": dob.value}
    r = d.call("cancel_appointment", {**args, "date": wrong.value},
               {"status": "not_found", "upcoming": [{"date": real, "time": time.value, "visit_type": visit}]})
    up = r["upcoming"][0]
    d.say(f"I don't see an appointment for you on {d.date_words(wrong.value)}. I do see a {KINDS[up['visit_type']]} on "
          f"{d.date_words(up['date'])} at {d.time_words(up['time'])}. Is that the one?")
    d.user("oh, yes, that's the one. I mixed up the days", "yeah, that one, sorry", "right, that's it, please cancel it", filler=0.3)
    c = d.call("cancel_appointment", {**args, "date": up["date"]}, {"status": "cancelled", "date": up["date"], "fee": 0})
    d.say(f"Your {KINDS[visit]} on {d.date_words(c['date'])} is cancelled, with no fee. Would you like to rebook it for another day?")
    d.user("no, not right now. I'll call back when I know my schedule", "no thanks, I'll call later", "not yet, thanks")
    d.say("No problem. Just call us when you're ready and we'll find you a time.")


@scenario(CLINIC, "new_patient_slot_taken", since=2)
def new_patient_slot_taken(d: Dialogue) -> None:
    """A new patient picks a slot, the agent asks for the birthday, the slot is taken by then,
    and the caller books one of the remaining times from the first search."""
    day, visit = d.day(21), d.pick("checkup", "sick_visit")
    d.user(f"I'm new to the area and I'd like to become a patient. can I get a {KINDS[visit]} {day}?",
           f"do you take new patients? I need a {KINDS[visit]}, {day} if you can")
    slots, who = _slots(d, 3, 8, 16), d.pick(*DOCTORS)
    r = d.call("find_appointment_slots", {"date": day.value, "visit_type": visit},
               {"slots": slots, "provider": who, "accepting_new_patients": True})
    d.say(f"Yes, {_doctor(r['provider'])} is taking new patients and has {_times(d, slots)} on {d.date_words(day.value)}. "
          "Which would you like, and what's your full name?")
    first, name = d.pick(*slots), d.person()
    d.user(f"{_heard(d, first)}, and it's {name}", f"I'll take {_heard(d, first)}. my name is {name}")
    d.say("Thanks. And your date of birth?", "Got it. What's your date of birth?")
    dob = d.birthday()
    d.user(f"{dob}", f"it's {dob}", filler=0.3)
    args = {"patient_name": name.value, "date_of_birth": dob.value, "date": day.value, "visit_type": visit}
    d.call("book_appointment", {**args, "time": first}, {"status": "unavailable", "reason": "slot_taken"})
    rest = [s for s in slots if s != first]
    d.say(f"I'm sorry, {d.time_words(first)} was just taken. I still have {_times(d, rest)}. Would one of those work?")
    slot = d.pick(*rest)
    d.user(f"okay, {_heard(d, slot)} then", f"ugh, fine, {_heard(d, slot)}", f"{_heard(d, slot)} works", filler=0.3)
    b = d.call("book_appointment", {**args, "time": slot},
               {"status": "booked", "provider": who, "new_patient": True, "arrive_early_minutes": 15})
    d.say(f"You're booked with {_doctor(b['provider'])} on {d.date_words(day.value)} at {d.time_words(slot)}. As a new "
          f"patient, please come {d.words(b['arrive_early_minutes'])} minutes early and bring your insurance card.")


@scenario(CLINIC, "cancel_then_vaccination", since=2)
def cancel_then_vaccination(d: Dialogue) -> None:
    """Cancel, search, book in one call: the caller feels better, drops the sick visit and books
    a flu shot instead, on the same day or another one."""
    name, dob, day = d.person(), d.birthday(), d.day(10)
    d.user(f"I'm feeling better, so please cancel my sick visit {day}. but could I get a flu shot instead? I'm {name}, born {dob}",
           f"hi, {name} here, birthday {dob}. I'm better now, so cancel my sick visit {day}. can I book a flu shot?")
    args = {"patient_name": name.value, "date_of_birth": dob.value}
    d.call("cancel_appointment", {**args, "date": day.value}, {"status": "cancelled", "date": day.value})
    d.say(f"Glad you're feeling better. Your sick visit on {d.date_words(day.value)} is cancelled. "
          "For the flu shot, would the same day work, or another day?")
    other = d.pick(None, d.day(14))
    when = other.value if other else day.value
    d.user(*([f"let's do {other} instead", f"hmm, {other} would be better"] if other
             else ["the same day is fine", "same day, if you have something"]), filler=0.3)
    slots = _slots(d, 2, 9, 16)
    r = d.call("find_appointment_slots", {"date": when, "visit_type": "vaccination"},
               {"slots": slots, "staff": "nurse", "duration_minutes": 15})
    d.say(f"On {d.date_words(when)} the nurse has {_times(d, slots)}. Which one?")
    slot = d.pick(*slots)
    d.user(f"{_heard(d, slot)}. do I need to see the doctor for that?", f"{_heard(d, slot)} please. is it with a doctor?")
    d.call("book_appointment", {**args, "date": when, "time": slot, "visit_type": "vaccination"}, {"status": "booked"})
    d.say(f"You're booked for {d.time_words(slot)} on {d.date_words(when)}. It's with our {r['staff']}, not the doctor, "
          f"and takes about {d.words(r['duration_minutes'])} minutes.")


@scenario(CLINIC, "after_school_by_provider", since=2)
def after_school_by_provider(d: Dialogue) -> None:
    """Slots come with a provider each; the agent reads only the ones after school, then says
    whether the family's usual doctor is among them before booking the child."""
    day, doctor, start = d.day(14), d.pick(*DOCTORS), d.pick(15, 16)
    d.user(f"do you have anything after {d.words(start - 12)} {day}? my kid can't miss school",
           f"I need an appointment for my child {day}, after {d.words(start - 12)}, once school's out")
    d.say("Sure. What kind of visit is it?", "I can look. Is it a checkup, a sick visit, a follow up, or a vaccination?")
    visit = d.pick(*KINDS)
    d.user(f"a {KINDS[visit]}", f"just a {KINDS[visit]}", filler=0.3)
    early, late = _slots(d, 2, 9, start - 2), _slots(d, 2, start, 17)
    found = [{"time": t, "provider": d.pick(*DOCTORS)} for t in early + late]
    r = d.call("find_appointment_slots", {"date": day.value, "visit_type": visit}, {"date": day.value, "slots": found})
    after = [s for s in r["slots"] if s["time"] >= f"{start:02d}:00"]
    d.say(f"After {d.words(start - 12)} on {d.date_words(day.value)}, I have " +
          " and ".join(f"{d.time_words(s['time'])} with {_doctor(s['provider'])}" for s in after) + ".")
    d.user(f"we usually see {_asked(doctor)}. is one of those with them?",
           f"is {_asked(doctor)} free then? that's who we normally see", filler=0.3)
    mine = [s for s in after if s["provider"] == doctor]
    pick = mine[0] if mine else after[0]
    if mine:
        d.say(f"Yes, {_doctor(doctor)} has the {d.time_words(pick['time'])}. What's your child's name and date of birth?")
    else:
        d.say(f"{_doctor(doctor)} isn't free after {d.words(start - 12)} that day. The {d.time_words(pick['time'])} is with "
              f"{_doctor(pick['provider'])}. Would that be okay? If so, what's your child's name and date of birth?")
    kid, last = d.pick(*FIRST_NAMES), d.last_name()
    born = date(d.rng.randint(2010, 2022), d.rng.randint(1, 12), d.rng.randint(1, 28)).isoformat()
    said = Said(born, f"{spoken.spoken_date(born)} {spoken.year(int(born[:4]))}".lower())
    d.user(f"{'' if mine else 'that is fine. '}it's {kid} {last}, born {said}", f"{kid} {last}, {said}")
    d.call("book_appointment", {"patient_name": f"{kid} {last.value}", "date_of_birth": born, "date": day.value,
                                "time": pick["time"], "visit_type": visit}, {"status": "booked", "provider": pick["provider"]})
    d.say(f"{kid} is booked with {_doctor(pick['provider'])} on {d.date_words(day.value)} at {d.time_words(pick['time'])}.")


# -- telecom ------------------------------------------------------------------------------------


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
