"""Telecom support and clinic scheduling callers."""

from __future__ import annotations

from turnspec.workloads.catalog import domain, load_tools, scenario
from turnspec.workloads.dialogue import Dialogue
from turnspec.workloads.spoken import Said

PLANS = ("basic", "unlimited", "unlimited_plus", "family")

TELECOM = domain("telecom", ("Brightline Mobile", "Cascade Fiber", "Metro Connect"), "technical support", load_tools("telecom"))


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


DOCTORS = ("dr_alvarez", "dr_bennett", "dr_choi")
VISITS = ("checkup", "sick_visit", "follow_up", "vaccination")

CLINIC = domain("clinic", ("Maple Grove Family Clinic", "Riverbend Medical Group", "Sunrise Pediatrics"), "the front desk", load_tools("clinic"))


@scenario(CLINIC, "find_and_book")
def find_and_book(d: Dialogue) -> None:
    day, visit = d.day(14), d.pick(*VISITS)
    doctor = d.pick(None, *DOCTORS)
    want = f" with {doctor.replace('dr_', 'doctor ').title()}" if doctor else ""
    d.user(f"I need to make an appointment{want} {day}, for a {visit.replace('_', ' ')}",
           f"do you have anything {day}{want}? it's a {visit.replace('_', ' ')}")
    args = {"date": day.value, "visit_type": visit, **({"provider": doctor} if doctor else {})}
    slots = sorted({d.clock(8, 16).value for _ in range(3)})
    d.call("find_appointment_slots", args, {"slots": slots})
    d.say(f"On {d.date_words(day.value)} I have " + ", ".join(d.time_words(s) for s in slots) + ". Which would you like?")
    slot, name, dob = d.pick(*slots), d.person(), d.birthday()
    d.user(f"{d.time_words(slot)} please. it's for {name}, born {dob}", f"um, {d.time_words(slot)}. patient is {name}, birthday {dob}")
    d.call("book_appointment", {"patient_name": name.value, "date_of_birth": dob.value, "date": day.value, "time": slot,
                                "visit_type": visit}, {"status": "booked"})
    d.say(f"{name.value.split()[0]} is booked for {d.date_words(day.value)} at {d.time_words(slot)}. Please arrive ten minutes early.")


@scenario(CLINIC, "reschedule")
def reschedule(d: Dialogue) -> None:
    name, dob, day, time = d.person(), d.birthday(), d.day(21), d.clock(8, 16)
    d.user(f"I need to move my appointment. {name}, date of birth {dob}", f"hi, this is {name}, born {dob}, I have to reschedule")
    d.say("No problem. What day and time would work better?")
    d.user(f"{day} at {d.fix(time, d.clock(8, 16))}", f"could we do {day}, around {time}?")
    d.call("reschedule_appointment", {"patient_name": name.value, "date_of_birth": dob.value, "new_date": day.value,
                                      "new_time": time.value}, {"status": "rescheduled"})
    d.say(f"Done, you're now on {d.date_words(day.value)} at {d.time_words(time.value)}.")


@scenario(CLINIC, "cancel_appointment")
def cancel_appointment(d: Dialogue) -> None:
    name, dob, day = d.person(), d.birthday(), d.day(10)
    d.user(f"I have to cancel my appointment {day}. name is {name}, born {dob}",
           f"please cancel {name}'s visit {day}, date of birth {dob}")
    d.call("cancel_appointment", {"patient_name": name.value, "date_of_birth": dob.value, "date": day.value}, {"status": "cancelled"})
    d.say("Your appointment is cancelled. Call us whenever you'd like to rebook.")


@scenario(CLINIC, "prescription_refill", heldout=True)
def prescription_refill(d: Dialogue) -> None:
    name, dob = d.person(), d.birthday()
    med = d.pick("lisinopril", "metformin", "atorvastatin", "levothyroxine", "amoxicillin", "albuterol inhaler")
    d.user(f"I need a refill on my {med}. I'm {name}, born {dob}", f"can you send a refill request for {med}? {name}, {dob}")
    d.call("request_prescription_refill", {"patient_name": name.value, "date_of_birth": dob.value, "medication": med},
           {"status": "sent", "pharmacy": d.pick("CVS on Main Street", "Walgreens on Oak Street")})
    d.say(f"I've sent the {med} refill to your provider. It usually takes one to two business days.")


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
