"""Ride-hailing callers (rider support): fares, rides, driver arrival, cancels, lost items.

Held out: lost_item (report_lost_item is called by no train goal). The later train goals add two
car types compared, a wrong pickup rebooked, a booking refused for too many riders, round-trip
estimates, a misheard ride id, a ride for someone else and a cancel rethought over its fee."""

from __future__ import annotations

from turnspec.workloads.catalog import domain, load_tools, scenario
from turnspec.workloads.dialogue import Dialogue
from turnspec.workloads.spoken import CODE_CHARS, duration_words

RIDES = domain("ride_hailing", ("ZipRide", "Metro Cabs", "Hopper Rides"), "rider support", load_tools("ride_hailing"))
PLACES = ("the airport", "Union Station", "the convention center", "Mercy Hospital", "the downtown library", "Lakeside Mall")
CARS = ("gray Toyota Camry", "black Honda Accord", "white Tesla Model 3", "blue Hyundai Sonata", "silver Kia Optima")
XL_CARS = ("black Chevy Suburban", "white Honda Odyssey", "gray Toyota Sienna")


def _first(d: Dialogue) -> str:
    return d.person().value.split()[0]


def _fare(d: Dialogue, low: int, high: int, minutes: tuple[int, ...]) -> dict:
    cheap = d.rng.randint(low, high)
    return {"low": float(cheap), "high": float(cheap + d.rng.randint(5, 12)), "minutes": d.pick(*minutes)}


def _booked(d: Dialogue, cars: tuple[str, ...] = CARS) -> dict:
    return {"ride_id": "R" + d.code(6).value, "driver": _first(d), "car": d.pick(*cars), "eta_minutes": d.pick(3, 4, 6, 9)}


# -- first goals (workload 1) -------------------------------------------------------------------


@scenario(RIDES, "estimate_then_ride")
def estimate_then_ride(d: Dialogue) -> None:
    pickup, dest = d.address(), d.pick(*PLACES)
    riders = d.count(1, 6)
    kind = "xl" if riders.value > 4 else d.pick("standard", "comfort")
    d.user(f"how much is a ride from {pickup} to {dest}?", f"what would it cost to get to {dest} from {pickup}?")
    r = d.call("get_fare_estimate", {"pickup": pickup.value, "destination": dest, "ride_type": kind},
               {"low": d.money(12, 30, cents=False).value, "high": d.money(31, 60, cents=False).value, "minutes": d.pick(14, 22, 35)})
    d.say(f"About {d.money_words(r['low'])} to {d.money_words(r['high'])}, roughly {d.words(r['minutes'])} minutes. Want me to book it?")
    d.user(f"yes please, we're {riders}" if riders.value > 1 else "yeah, just me", filler=0.3)
    ride = d.call("request_ride", {"pickup": pickup.value, "destination": dest, "ride_type": kind, "passengers": riders.value},
                  {"ride_id": "R" + d.code(6).value, "driver": d.person().value.split()[0], "eta_minutes": d.pick(3, 5, 8)})
    d.say(f"{ride['driver']} is on the way and will be there in {d.words(ride['eta_minutes'])} minutes.")


@scenario(RIDES, "request_ride")
def request_ride(d: Dialogue) -> None:
    pickup, dest, riders = d.pick(*PLACES), d.address(), d.count(1, 4)
    kind = d.pick("standard", "comfort")
    d.user(f"I need a {kind} ride from {pickup} to {dest}" + (f", {riders} of us" if riders.value > 1 else ""),
           f"can you send a car to {pickup}? going to {dest}" + (f". {riders} people" if riders.value > 1 else ""))
    ride = d.call("request_ride", {"pickup": pickup, "destination": dest.value, "ride_type": kind, "passengers": riders.value},
                  {"ride_id": "R" + d.code(6).value, "driver": d.person().value.split()[0], "car": "gray Toyota Camry", "eta_minutes": d.pick(4, 6, 9)})
    d.say(f"Booked. {ride['driver']} in a {ride['car']} arrives in about {d.words(ride['eta_minutes'])} minutes.")


@scenario(RIDES, "driver_eta")
def driver_eta(d: Dialogue) -> None:
    ride_id = "R" + d.code(6).value
    d.user(f"where's my driver? ride {d.spell(ride_id)}", f"my car is late, the ride number is {d.spell(ride_id)}")
    r = d.call("get_driver_eta", {"ride_id": ride_id}, {"eta_minutes": d.pick(2, 4, 7), "distance_miles": 0.8})
    d.say(f"Your driver is about {d.words(r['eta_minutes'])} minutes away.")
    if d.chance(0.5):
        d.user("that's too long, just cancel it", "ugh, cancel it please, I'll walk")
        d.call("cancel_ride", {"ride_id": ride_id, "reason": "driver_late"}, {"status": "cancelled", "fee": 0})
        d.say("Cancelled, with no fee since the driver was late.")


@scenario(RIDES, "lost_item", heldout=True)
def lost_item(d: Dialogue) -> None:
    ride_id, phone, item = "R" + d.code(6).value, d.digits(10), d.pick("phone", "wallet", "backpack", "umbrella", "keys")
    d.user(f"I left my {item} in the car. ride {d.spell(ride_id)}", f"I think I forgot my {item} on ride {d.spell(ride_id)}")
    d.say("Sorry about that. What number should the driver call?")
    d.user(f"{phone}", f"you can reach me at {phone}", filler=0.3)
    d.call("report_lost_item", {"ride_id": ride_id, "item": item, "callback_number": phone.value}, {"status": "driver_notified"})
    d.say("I've notified the driver; they'll call you to arrange getting it back.")


@scenario(RIDES, "cancel_ride")
def cancel_ride(d: Dialogue) -> None:
    ride_id = "R" + d.code(6).value
    reason = d.pick("plans_changed", "wrong_pickup")
    why = {"plans_changed": "my plans changed", "wrong_pickup": "I put the wrong pickup spot"}[reason]
    d.user(f"I need to cancel ride {d.spell(ride_id)}, {why}", f"can you cancel my ride? {why}. it's {d.spell(ride_id)}")
    r = d.call("cancel_ride", {"ride_id": ride_id, "reason": reason},
               {"status": "cancelled", "fee": d.pick(0, 0, 5)})
    fee = f" A {d.money_words(r['fee'])} cancellation fee applies." if r["fee"] else " There's no fee."
    d.say(f"Ride {d.spell(ride_id)} is cancelled.{fee}")


# -- more train goals (workload 1): retries, changes of mind, several lookups -------------------


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


# -- workload 2 train goals (since=2) -----------------------------------------------------------


@scenario(RIDES, "too_many_for_standard", since=2)
def too_many_for_standard(d: Dialogue) -> None:
    """The agent asks the rider count; a standard car is refused, an XL quoted, then booked or split."""
    pickup, dest, riders = d.pick(*PLACES), d.address(), d.count(5, 6)
    d.user(f"can I get a standard car from {pickup} to {dest}?", f"I need a regular ride from {pickup} to {dest}")
    d.say("Sure. How many people are riding?", "Okay. How many passengers will there be?")
    d.user(f"there's {riders} of us", f"{riders}, with a couple of bags", f"we're {riders}", filler=0.3)
    route = {"pickup": pickup, "destination": dest.value}
    d.call("request_ride", {**route, "ride_type": "standard", "passengers": riders.value},
           {"error": "too_many_passengers", "ride_type": "standard", "max_passengers": 4})
    d.say(f"A standard car only seats four, so I couldn't book it for {d.words(riders.value)}. An XL seats six. "
          "Should I check the XL price?")
    d.user("yeah, how much is it?", "sure, what does that cost?", filler=0.3)
    est = d.call("get_fare_estimate", {**route, "ride_type": "xl"}, _fare(d, 30, 55, (18, 25, 32)))
    d.say(f"An XL is {d.money_words(est['low'])} to {d.money_words(est['high'])}, about "
          f"{d.words(est['minutes'])} minutes. Want me to book it?")
    if d.chance(0.6):
        d.user("yes, book the XL", "okay, go ahead with the XL", filler=0.3)
        ride = d.call("request_ride", {**route, "ride_type": "xl", "passengers": riders.value}, _booked(d, XL_CARS))
        d.say(f"Booked. {ride['driver']} in a {ride['car']} will be there in {duration_words(ride['eta_minutes'])}.")
        return
    rest = riders.value - 4
    d.user("that's a lot. just send two standard cars instead", "hmm, can we do two regular cars instead?")
    a = d.call("request_ride", {**route, "ride_type": "standard", "passengers": 4}, _booked(d))
    b = d.call("request_ride", {**route, "ride_type": "standard", "passengers": rest}, _booked(d))
    d.say(f"Two cars are booked: {a['driver']} in a {a['car']} for four, in {duration_words(a['eta_minutes'])}, and "
          f"{b['driver']} in a {b['car']} for the other {d.words(rest)}, in {duration_words(b['eta_minutes'])}.")


@scenario(RIDES, "round_trip_estimates", since=2)
def round_trip_estimates(d: Dialogue) -> None:
    """Estimates for both legs (pickup and destination swapped); only the first leg is booked now."""
    home, place, kind, riders = d.address(), d.pick(*PLACES), d.pick("standard", "comfort"), d.count(1, 3)
    d.user(f"what would a {kind} ride to {place} and back cost? I'm at {home}",
           f"I need to get to {place} from {home} and come back later. how much both ways, {kind}?")
    leg = {"pickup": home.value, "destination": place, "ride_type": kind}
    go = d.call("get_fare_estimate", leg, _fare(d, 15, 35, (14, 20, 27)))
    surge = d.chance(0.4)
    back = {"low": go["low"] + (6.0 if surge else 0.0), "high": go["high"] + (9.0 if surge else 1.0),
            "minutes": go["minutes"] + d.pick(0, 3), "surge": surge}
    back = d.call("get_fare_estimate", {"pickup": place, "destination": home.value, "ride_type": kind}, back)
    d.say(f"Going there is about {d.money_words(go['low'])} to {d.money_words(go['high'])}, and back is "
          f"{d.money_words(back['low'])} to {d.money_words(back['high'])}"
          + (", a bit more because demand is high then" if surge else "")
          + f". So roughly {d.money_words(go['low'] + back['low'])} to {d.money_words(go['high'] + back['high'])} "
          "both ways. Should I send a car now for the first leg?")
    who = f", there's {riders} of us" if riders.value > 1 else ""
    if d.chance(0.4):
        d.user(f"yes{who}. and can you book the ride back now too?", f"sure{who}. can I book the way back as well?")
        d.say("I can only request cars for right now, so just call us or use the app when you're ready to head "
              "back. I'll send the first car now.")
    else:
        d.user(f"yes, just the way there for now{who}", f"yeah, send one now{who}. I'll call for the way back")
    ride = d.call("request_ride", {**leg, "passengers": riders.value}, _booked(d))
    d.say(f"{ride['driver']} is on the way in a {ride['car']} and will be at {home.value} in "
          f"{duration_words(ride['eta_minutes'])}. Your ride number is {d.spell(ride['ride_id'])}.")


@scenario(RIDES, "eta_ride_not_found", since=2)
def eta_ride_not_found(d: Dialogue) -> None:
    """A misheard ride id finds nothing; the reread one gives the ETA, and a follow-up reads the car."""
    ride_id, i = "R" + d.code(6).value, d.rng.randrange(1, 7)
    misread = ride_id[:i] + d.pick(*[c for c in CODE_CHARS if c != ride_id[i]]) + ride_id[i + 1:]
    d.user(f"how far away is my driver? ride {d.spell(misread)}", f"I'm waiting on ride {d.spell(misread)}, where is it?")
    d.call("get_driver_eta", {"ride_id": misread}, {"error": "ride_not_found"})
    d.say(f"I can't find a ride {d.spell(misread)}. Could you read the ride number again? It's on your trip in the app.")
    d.user(f"sorry, the ride number is {d.spell(ride_id)}", f"oh, let me look. it's ride {d.spell(ride_id)}", filler=0.3)
    r = d.call("get_driver_eta", {"ride_id": ride_id},
               {"eta_minutes": d.pick(2, 5, 8), "driver": _first(d), "car": d.pick(*CARS), "plate": d.code(7).value,
                "pickup": d.pick(*PLACES), "free_wait_minutes": d.pick(3, 5)})
    d.say(f"Found it. {r['driver']} is about {duration_words(r['eta_minutes'])} from {r['pickup']}.")
    if d.chance(0.5):
        d.user("what car am I looking for?", "how will I know which car it is?", "what's the plate number?")
        d.say(f"It's a {r['car']}, license plate {d.spell(r['plate'])}.")
    else:
        d.user("will they wait if I'm not outside yet?", "I'm still inside, can they wait a bit?")
        d.say(f"Once {r['driver']} arrives, they'll wait {d.words(r['free_wait_minutes'])} minutes at no charge. "
              f"Look for a {r['car']}.")


@scenario(RIDES, "book_for_someone_else", since=2)
def book_for_someone_else(d: Dialogue) -> None:
    """A booking for another rider (the agent asks where to), then an estimate: the reverse order."""
    place, (who, he, him) = d.pick(*PLACES), d.pick(("my mom", "she", "her"), ("my dad", "he", "him"),
                                                     ("my grandmother", "she", "her"), ("my son", "he", "him"))
    d.user(f"I need to book a car for {who}, {he}'s at {place}", f"can you send a ride to {place} for {who}?")
    d.say(f"I can help with that. Where is {he} going, and is it just {him}?")
    dest, kind = d.address(), d.pick("standard", "comfort")
    d.user(f"to {d.fix(dest, d.address(), 0.35)}, just {him}" + (". a comfort car please" if kind == "comfort" else ""),
           f"home, {d.fix(dest, d.address(), 0.35)}. only {him}" + (", comfort" if kind == "comfort" else ""))
    ride = d.call("request_ride", {"pickup": place, "destination": dest.value, "ride_type": kind, "passengers": 1}, _booked(d))
    d.say(f"Booked. {ride['driver']} in a {ride['car']} will pick {him} up at {place} in about "
          f"{duration_words(ride['eta_minutes'])}. The ride number is {d.spell(ride['ride_id'])}.")
    d.user("how much will that cost me? and how long is the drive?", f"roughly what will it cost, and when will {he} get there?")
    est = d.call("get_fare_estimate", {"pickup": place, "destination": dest.value, "ride_type": kind},
                 _fare(d, 14, 40, (12, 19, 26)))
    d.say(f"It should be {d.money_words(est['low'])} to {d.money_words(est['high'])}, and the drive is about "
          f"{d.words(est['minutes'])} minutes once {he}'s picked up.")


@scenario(RIDES, "cancel_fee_rethink", since=2)
def cancel_fee_rethink(d: Dialogue) -> None:
    """An ETA check before cancelling shows the driver is close, so a fee applies; keep it or cancel."""
    ride_id = "R" + d.code(6).value
    d.user(f"I want to cancel my ride, {d.spell(ride_id)}", f"please cancel ride {d.spell(ride_id)}, my friend is giving me a lift")
    r = d.call("get_driver_eta", {"ride_id": ride_id},
               {"eta_minutes": d.pick(1, 2), "driver": _first(d), "car": d.pick(*CARS),
                "cancellation_fee": d.pick(5.0, 7.5), "card_last4": d.digits(4).value})
    fee = r["cancellation_fee"]
    d.say(f"Before I cancel: {r['driver']} is only {duration_words(r['eta_minutes'])} away, so cancelling now has a "
          f"{d.money_words(fee)} fee. Do you still want to cancel?")
    if d.chance(0.5):
        d.user("oh, never mind then, I'll just take it", "hmm, no, I'll ride. keep it", filler=0.3)
        d.say(f"No problem, the ride stays booked. {r['driver']} will be there in a {r['car']} in about "
              f"{duration_words(r['eta_minutes'])}.")
        return
    d.user("yes, cancel it anyway", "that's fine, cancel it", filler=0.3)
    c = d.call("cancel_ride", {"ride_id": ride_id, "reason": "plans_changed"}, {"status": "cancelled", "fee": fee})
    d.say(f"Ride {d.spell(ride_id)} is cancelled. The {d.money_words(c['fee'])} fee goes on your card ending in "
          f"{d.spell(r['card_last4'])}.")

