"""Phone calls to a parcel courier, as a `turnspec loadtest --workload FILE` JSONL (seeded).

The recorded-traffic loop (docs/recording.md, "Closing the loop") needs a deployment's traffic
in a domain the drafter never saw: neither the workload generator's eight domains nor the
independent eval set (speculator/eval/) has a courier. Callers track parcels, move deliveries,
change addresses, book pickups, report damage and look for drop-off points, in disfluent
speech-to-text; the agent calls a tool, gets its result and answers in a short spoken line.

    python scripts/loop/courier.py --calls 480 --seed 0 --out runs/loop/courier.jsonl
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path


def fn(name: str, desc: str, props: dict, required: list[str]) -> dict:
    return {"type": "function", "function": {"name": name, "description": desc, "parameters": {
        "type": "object", "properties": props, "required": required}}}


S, N = {"type": "string"}, {"type": "number"}
TOOLS = [
    fn("track_parcel", "Where a parcel is and when it arrives.", {"tracking_number": S}, ["tracking_number"]),
    fn("reschedule_delivery", "Move a delivery to another day and time window.",
       {"tracking_number": S, "date": S, "window": {"type": "string", "enum": ["morning", "afternoon", "evening"]}},
       ["tracking_number", "date", "window"]),
    fn("change_delivery_address", "Send a parcel that has not left the depot to another address.",
       {"tracking_number": S, "new_address": S}, ["tracking_number", "new_address"]),
    fn("book_pickup", "Book a courier to collect parcels.",
       {"address": S, "date": S, "parcels": {"type": "integer"}, "weight_kg": N}, ["address", "date", "parcels"]),
    fn("report_damage", "Open a damage claim for a delivered parcel.",
       {"tracking_number": S, "description": S}, ["tracking_number", "description"]),
    fn("find_dropoff_point", "The nearest drop-off points for a postcode.", {"postcode": S}, ["postcode"]),
]
COMPANIES = ["Swiftline Couriers", "Parcelpoint Express", "Northway Delivery", "Red Kite Parcels"]
OPEN = ["hi", "hello", "yeah hi", "hi there", "um hello", "good morning", "hey", "hiya"]
FILL = ["", "", "um ", "uh ", "so ", "yeah so ", "okay um ", "right so "]
STREETS = ["Mill Lane", "Station Road", "Church Street", "Oak Avenue", "Harbour View", "Kings Road",
           "Elm Close", "Victoria Street", "Bridge End", "Park Crescent", "Queens Walk", "Meadow Way"]
DAYS = ["tomorrow", "friday", "monday", "next tuesday", "the twelfth", "saturday", "wednesday"]
WINDOWS = ["morning", "afternoon", "evening"]
ITEMS = ["a lamp", "some plates", "a laptop", "a guitar", "a mirror", "a box of books", "a printer"]
DAMAGE = ["the box was crushed", "it's soaking wet", "the corner is smashed in", "it rattles, something's broken"]
STATUS = [("at the local depot", "today by 6 pm"), ("out for delivery", "within two hours"),
          ("in transit to the hub", "tomorrow"), ("held at customs", "in three to five days")]
NUM_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
THANKS = ["great thanks", "okay cool thank you", "perfect, thanks bye", "alright cheers", "thanks that's all"]


def tracking(rng: random.Random) -> tuple[str, str]:
    letters = "".join(rng.choice("ABCDEFGHJKLMNPRSTUVWXYZ") for _ in range(2))
    digits = "".join(rng.choice("0123456789") for _ in range(rng.choice([6, 8])))
    spoken = " ".join(list(letters.lower())) + " " + " ".join(NUM_WORDS[int(d)] for d in digits)
    return letters + digits, spoken


def postcode(rng: random.Random) -> str:
    return f"{rng.choice('BLMNS')}{rng.choice('ERS')}{rng.randint(1, 19)} {rng.randint(1, 9)}{rng.choice('ABDEFG')}{rng.choice('HJLNPQ')}"


class Call:
    def __init__(self, rng: random.Random, i: int) -> None:
        self.rng, self.n = rng, 0
        company = rng.choice(COMPANIES)
        self.messages: list[dict] = [{"role": "system", "content": (
            f"You are the phone agent of {company}, a parcel courier. Keep every answer to one or "
            "two short spoken sentences. Use the tools to look things up or change a booking; "
            "never guess a parcel's status.")}]
        self.id = f"courier-{i:04d}"

    def user(self, text: str) -> None:
        self.messages.append({"role": "user", "content": text})

    def call(self, name: str, args: dict, result: dict, reply: str) -> None:
        self.n += 1
        cid = f"call_{self.n}"
        self.messages += [
            {"role": "assistant", "content": None, "tool_calls": [{"id": cid, "type": "function",
             "function": {"name": name, "arguments": json.dumps(args)}}]},
            {"role": "tool", "tool_call_id": cid, "content": json.dumps(result)},
            {"role": "assistant", "content": reply}]

    def say(self, text: str) -> None:
        self.messages.append({"role": "assistant", "content": text})


def one_call(rng: random.Random, i: int) -> dict:
    c, f = Call(rng, i), lambda: rng.choice(FILL)
    num, spoken = tracking(rng)
    goal = rng.choice(["track", "track", "reschedule", "address", "pickup", "damage", "dropoff"])
    if goal in ("track", "reschedule"):
        where, eta = rng.choice(STATUS)
        c.user(f"{rng.choice(OPEN)}, {f()}I'm waiting on a parcel, the tracking number is {spoken}")
        c.call("track_parcel", {"tracking_number": num}, {"status": where, "eta": eta},
               f"Your parcel is {where} and should arrive {eta}.")
        if goal == "reschedule" or rng.random() < 0.4:
            day, win = rng.choice(DAYS), rng.choice(WINDOWS)
            c.user(f"{f()}I won't be in, can you make it {day} in the {win} instead")
            c.call("reschedule_delivery", {"tracking_number": num, "date": day, "window": win},
                   {"ok": True, "date": day, "window": win},
                   f"Done, it's moved to {day}, {win} delivery.")
    elif goal == "address":
        street, n = rng.choice(STREETS), rng.randint(2, 140)
        c.user(f"{rng.choice(OPEN)}, {f()}can I send my parcel somewhere else, it's {spoken}")
        c.say("Sure, what address should it go to?")
        c.user(f"{f()}{n} {street}, {f()}that's my work")
        c.call("change_delivery_address", {"tracking_number": num, "new_address": f"{n} {street}"},
               {"ok": rng.random() < 0.8}, f"Okay, it will go to {n} {street} instead.")
    elif goal == "pickup":
        street, n, k = rng.choice(STREETS), rng.randint(2, 140), rng.randint(1, 4)
        day, kg = rng.choice(DAYS), rng.choice([1, 2, 3.5, 5, 8, 12])
        c.user(f"{rng.choice(OPEN)}, {f()}I need you to collect {NUM_WORDS[k]} parcel{'s' * (k > 1)} "
               f"from {n} {street} {day}, about {kg} kilos")
        c.call("book_pickup", {"address": f"{n} {street}", "date": day, "parcels": k, "weight_kg": kg},
               {"ok": True, "slot": rng.choice(["8 to 12", "12 to 4", "all day"])},
               f"Booked: a courier will collect from {n} {street} {day}.")
    elif goal == "damage":
        c.user(f"{rng.choice(OPEN)}, {f()}my delivery came today and {rng.choice(DAMAGE)}, it was {rng.choice(ITEMS)}")
        c.say("I'm sorry about that. What's the tracking number?")
        c.user(f"{f()}it's {spoken}")
        c.call("report_damage", {"tracking_number": num, "description": "damaged on arrival"},
               {"claim": f"CL{rng.randint(10000, 99999)}"}, "I've opened a claim; you'll get an email today.")
    else:
        pc = postcode(rng)
        c.user(f"{rng.choice(OPEN)}, {f()}where's the nearest place I can drop off a parcel, I'm in {pc}")
        c.call("find_dropoff_point", {"postcode": pc},
               {"points": [f"{rng.choice(['Corner Shop', 'Post Office', 'Locker'])} on {rng.choice(STREETS)}"]},
               "The nearest drop-off point is close to you.")
    c.user(rng.choice(THANKS))
    return {"id": c.id, "max_tokens": 64, "tools": TOOLS, "messages": c.messages}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--calls", type=int, default=480)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True)
    args = p.parse_args()
    rng = random.Random(args.seed)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(one_call(rng, i)) + "\n" for i in range(args.calls)))
    print(f"{out}: {args.calls} calls")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
