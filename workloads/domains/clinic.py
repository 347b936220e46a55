"""Clinic scheduling callers (the front desk): slots, bookings, reschedules, refills.

Held out: prescription_refill (request_prescription_refill is called by no train goal). The later
train goals add a full day then another day or provider, two siblings back to back, openings
checked before a reschedule, a cancel on the wrong day, a slot taken between search and booking,
a cancel then a vaccination and slots read by provider."""

from __future__ import annotations

from datetime import date

from turnspec.workloads import spoken
from turnspec.workloads.catalog import domain, load_tools, scenario
from turnspec.workloads.dialogue import FIRST_NAMES, LAST_NAMES, Dialogue, days_after
from turnspec.workloads.spoken import Said

CLINIC = domain("clinic", ("Maple Grove Family Clinic", "Riverbend Medical Group", "Sunrise Pediatrics"),
                "the front desk", load_tools("clinic"))
DOCTORS = ("dr_alvarez", "dr_bennett", "dr_choi")
VISITS = ("checkup", "sick_visit", "follow_up", "vaccination")
KINDS = {"checkup": "checkup", "sick_visit": "sick visit", "follow_up": "follow up", "vaccination": "vaccination"}


def _doctor(name: str) -> str:
    return name.replace("dr_", "doctor ").title()


def _child(d: Dialogue, first: str, last: str) -> tuple[Said, Said]:
    born = date(d.rng.randint(2012, 2024), d.rng.randint(1, 12), d.rng.randint(1, 28))
    said = f"{spoken.spoken_date(born.isoformat())} {spoken.year(born.year)}".lower()
    return Said(f"{first} {last}", f"{first}"), Said(born.isoformat(), said)


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


# -- first goals (workload 1) -------------------------------------------------------------------


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


# -- more train goals (workload 1): retries, changes of mind, several lookups -------------------


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


# -- workload 2 train goals (since=2) -----------------------------------------------------------


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

