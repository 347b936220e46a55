"""Workload version 2 train scenarios, e-commerce and ride hailing: five new caller goals each.

Flows the older scenarios lack: a ZIP code rejected and fixed, two order lookups before a cancel,
a cancel that fails first, a return-window check with a follow-up, a replacement request ending
in a transfer, a booking refused for too many riders, round-trip estimates, a misheard ride id, a
booking for someone else, and a cancel rethought over its fee. The tools reserved for held-out
goals (track_refund, report_lost_item) stay out.
"""

from __future__ import annotations

from turnspec.workloads.catalog import scenario
from turnspec.workloads.dialogue import CITIES, Dialogue
from turnspec.workloads.domains_commerce import ITEMS, PLACES, RIDES, SHOP

CARRIERS = ("UPS", "FedEx", "USPS")
CARS = ("gray Toyota Camry", "black Honda Accord", "white Tesla Model 3", "blue Hyundai Sonata", "silver Kia Optima")
SINGLE = tuple(i for i in ITEMS if not i.endswith("s"))  # "it arrived broken" reads right
XL_CARS = ("black Chevy Suburban", "white Honda Odyssey", "gray Toyota Sienna")
CODE_CHARS = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"


def _first(d: Dialogue) -> str:
    return d.person().value.split()[0]


def _minutes(d: Dialogue, n: int) -> str:
    return "one minute" if n == 1 else f"{d.words(n)} minutes"


def _fare(d: Dialogue, low: int, high: int, minutes: tuple[int, ...]) -> dict:
    cheap = d.rng.randint(low, high)
    return {"low": float(cheap), "high": float(cheap + d.rng.randint(5, 12)), "minutes": d.pick(*minutes)}


def _booked(d: Dialogue, cars: tuple[str, ...] = CARS) -> dict:
    return {"ride_id": "R" + d.code(6).value, "driver": _first(d), "car": d.pick(*cars), "eta_minutes": d.pick(3, 4, 6, 9)}


# -- e-commerce ---------------------------------------------------------------------------------


@scenario(SHOP, "address_zip_rejected", since=2)
def address_zip_rejected(d: Dialogue) -> None:
    """A lookup shows the old ship-to address; the new ZIP is rejected for the city and corrected."""
    order, old, new, city, wrong, right = d.digits(7), d.address(), d.address(), d.pick(*CITIES), d.digits(5), d.digits(5)
    d.user(f"I moved last week. is order {order} still going to my old place?",
           f"can you check where order {order} is shipping? I think it has my old address")
    r = d.call("get_order_status", {"order_number": order.value},
               {"status": "processing", "ship_to": f"{old.value}, {d.pick(*CITIES)}", "ships_by": d.day(3).value})
    d.say(f"It's set to ship to {r['ship_to']}, but it hasn't left yet, it ships by "
          f"{d.date_words(r['ships_by'])}. What's the new address?")
    if d.chance(0.5):
        d.user(f"it's {new} in {city}", f"{new}, {city}", filler=0.3)
        d.say("And the ZIP code?", "Got it. What's the ZIP code there?")
        d.user(f"{wrong}", f"zip is {wrong}", filler=0.3)
    else:
        d.user(f"{new}, {city}, {wrong}", f"it's {new} in {city}, zip {wrong}")
    args = {"order_number": order.value, "street": new.value, "city": city, "zip_code": wrong.value}
    d.call("change_shipping_address", args, {"status": "rejected", "error": "zip_city_mismatch", "city": city})
    d.say(f"Hmm, {d.spell(wrong.value)} doesn't match {city} in our system. Could you check the ZIP code?",
          f"The system won't take {d.spell(wrong.value)} as a ZIP code for {city}. Can you read it again?")
    d.user(f"oh, sorry, it's {right}", f"my bad, that's my old one. it's {right}", f"wait, {right}. sorry")
    r2 = d.call("change_shipping_address", {**args, "zip_code": right.value},
                {"status": "updated", "ship_to": f"{new.value}, {city} {right.value}", "ships_by": r["ships_by"]})
    d.say(f"That worked. It now ships to {new.value}, {city}, ZIP {d.spell(right.value)}, still by "
          f"{d.date_words(r2['ships_by'])}.")


@scenario(SHOP, "which_order_cancel", since=2)
def which_order_cancel(d: Dialogue) -> None:
    """Two order numbers, two lookups to find the item, then a cancel; a bundled item may stop it."""
    orders, item = (d.digits(7), d.digits(7)), d.pick(*SINGLE)
    extra, other = d.rng.sample([i for i in ITEMS if i != item], 2)
    d.user(f"I need to cancel the {item} but I don't know which order it's on. I have {orders[0]} and {orders[1]}",
           f"I placed two orders, {orders[0]} and {orders[1]}, and I want to cancel the one with the {item}")
    hit, bundled = d.pick(0, 1), d.chance(0.4)
    looked = []
    for i, order in enumerate(orders):
        things = ([item, extra] if bundled else [item]) if i == hit else [other]
        items = [{"item": x, "price": d.money(20, 120).value} for x in things]
        looked.append(d.call("get_order_status", {"order_number": order.value},
                             {"status": "processing", "items": items, "total": round(sum(x["price"] for x in items), 2)}))
    tail = d.spell(orders[hit].value[-4:])
    if bundled:
        d.say(f"The {item} is on the order ending in {tail}, together with the {extra}. Cancelling cancels the "
              "whole order, so you'd lose both. Do you still want to cancel it?")
        if d.chance(0.5):
            d.user(f"oh. no, leave it then, I want the {extra}", f"hmm, no, keep it. I'll return the {item} later")
            d.say(f"Okay, I've left the order as it is. Once it arrives, you can return the {item} for a refund.")
            return
        d.user(f"yes, cancel it anyway. I'll reorder the {extra}", "that's fine, cancel the whole thing", filler=0.3)
    else:
        d.say(f"The {item} is on the order ending in {tail}, and it hasn't shipped yet. Should I cancel that one?")
        d.user("yes please", "yep, that one", "yes, cancel it", filler=0.3)
    c = d.call("cancel_order", {"order_number": orders[hit].value},
               {"status": "cancelled", "refund_amount": looked[hit]["total"], "refund_to": "original_payment"})
    d.say(f"The order ending in {tail} is cancelled. {d.money_words(c['refund_amount']).capitalize()} goes back to "
          "your original payment method, and your other order isn't affected.")


@scenario(SHOP, "cancel_too_late_then_track", since=2)
def cancel_too_late_then_track(d: Dialogue) -> None:
    """The cancel comes first and fails (already shipped); a status lookup answers when it arrives."""
    order, item = d.digits(7), d.pick(*SINGLE)
    d.user(f"can you cancel order {order}? I found the {item} cheaper somewhere else",
           f"I want to cancel my {item}, order {order}. I don't need it anymore")
    r = d.call("cancel_order", {"order_number": order.value},
               {"status": "already_shipped", "shipped_on": d.days_ago(d.rng.randint(1, 2)), "free_return_days": 30})
    d.say(f"I'm sorry, it shipped {d.date_words(r['shipped_on'])}, so I can't cancel it now. Once it arrives you "
          f"can return it free within {d.words(r['free_return_days'])} days.")
    d.user("ugh, okay. so when is it supposed to get here?", "fine. when will it show up then?")
    s = d.call("get_order_status", {"order_number": order.value},
               {"status": "in_transit", "carrier": d.pick(*CARRIERS), "tracking_number": d.digits(12).value, "eta": d.day(5).value})
    d.say(f"It's with {s['carrier']} and should arrive {d.date_words(s['eta'])}. The tracking number ends in "
          f"{d.spell(s['tracking_number'][-4:])}. Want me to start the return now so the label is ready?")
    if d.chance(0.6):
        d.user("no, I'll wait till it comes", "nah, not yet. I might keep it actually", filler=0.3)
        d.say(f"No problem. You have {d.words(r['free_return_days'])} days after it's delivered, just call us.")
        return
    d.user("yeah, might as well", "sure, let's do it now", filler=0.3)
    d.call("start_return", {"order_number": order.value, "item": item, "reason": "changed_mind"},
           {"status": "return_started", "label_sent_to": "email", "refund_days": 5})
    d.say(f"Done. I've emailed the label. Send the {item} back once it arrives, and the refund takes about five "
          "days after we get it.")


@scenario(SHOP, "return_window_check", since=2)
def return_window_check(d: Dialogue) -> None:
    """A lookup checks the return window, the agent asks the reason, and the result answers a follow-up."""
    order, item = d.digits(7), d.pick(*SINGLE)
    d.user(f"am I still able to return the {item} from order {order}?",
           f"is it too late to send back a {item}? it's order {order}", f"how long do I have to return order {order}?")
    ago, price = d.pick(4, 9, 16, 24, 38), d.money(25, 140).value
    delivered = d.days_ago(ago)
    r = d.call("get_order_status", {"order_number": order.value},
               {"status": "delivered", "delivered_on": delivered, "items": [{"item": item, "price": price}],
                "return_window_days": 30, "return_by": d.days_ago(ago - 30)})
    if ago > 30:
        d.say(f"I'm sorry, it was delivered {d.date_words(delivered)} and the return window closed "
              f"{d.date_words(r['return_by'])}, so I can't start a return on it.")
        d.user("oh. not even if it's unused?", "really? even if I never opened it?")
        d.say("I'm afraid not, the thirty days count from delivery whether it was used or not. Sorry about that.")
        return
    d.say(f"It was delivered {d.date_words(delivered)}, so you have until {d.date_words(r['return_by'])}. "
          "What's the reason for the return?")
    reason = d.pick("wrong_size", "damaged", "not_as_described", "changed_mind")
    d.user({"wrong_size": "it's the wrong size", "damaged": "it came with a crack in it",
            "not_as_described": "it looks nothing like the photos", "changed_mind": "I just don't need it"}[reason],
           {"wrong_size": "it doesn't fit", "damaged": "it's damaged", "not_as_described": "it's not what was described",
            "changed_mind": "honestly I changed my mind"}[reason], filler=0.3)
    fee, via = (6.95 if reason == "changed_mind" else 0.0), d.pick("email", "text")
    s = d.call("start_return", {"order_number": order.value, "item": item, "reason": reason},
               {"status": "return_started", "label_sent_to": via, "refund_amount": price, "return_shipping_fee": fee})
    d.say(f"Your return is started, and I've sent the prepaid label by {'text message' if via == 'text' else 'email'}.")
    d.user("do I have to pay for the shipping back?", "how much will I get back?", "will I get the whole amount back?")
    if s["return_shipping_fee"]:
        d.say(f"Since it's a change of mind, a {d.money_words(fee)} return shipping fee comes off, so you'll get "
              f"{d.money_words(round(price - fee, 2))} back.")
    else:
        d.say(f"Return shipping is free for this one, so you'll get the full {d.money_words(price)} back.")


@scenario(SHOP, "damaged_wants_replacement", since=2)
def damaged_wants_replacement(d: Dialogue) -> None:
    """A damaged item and a replacement request: the agent can only refund, so a return or a transfer."""
    order, item = d.digits(7), d.pick(*SINGLE)
    d.user(f"my {item} from order {order} showed up broken. can you just send me a new one?",
           f"I got order {order} and the {item} is damaged. I'd like a replacement")
    stock = d.chance(0.5)
    r = d.call("get_order_status", {"order_number": order.value},
               {"status": "delivered", "delivered_on": d.days_ago(d.rng.randint(1, 4)),
                "items": [{"item": item, "price": d.money(30, 160).value, "in_stock": stock}]})
    price = r["items"][0]["price"]
    d.say(f"I'm sorry to hear that. I see the {item} was delivered {d.date_words(r['delivered_on'])}. I can't send "
          f"replacements from here, but I can start a return for the full {d.money_words(price)}. "
          + ("It's in stock if you'd like to reorder it. " if stock else "It's out of stock right now, though. ")
          + "Should I start the return?")
    if d.chance(0.5):
        d.user("okay, do the return", "fine, I'll take the refund", "alright, go ahead", filler=0.3)
        d.call("start_return", {"order_number": order.value, "item": item, "reason": "damaged"},
               {"status": "return_started", "label_sent_to": "email", "refund_amount": price, "photo_requested": True})
        d.say(f"Your return is started. I've emailed a prepaid label and a link to upload a photo of the damage; "
              f"the {d.money_words(price)} refund follows once it's back.")
        return
    d.user("no, I really want a replacement. can I talk to someone?", "no refund, I need a new one. is there a person?")
    t = d.call("transfer_to_human", {"reason": f"replacement for a damaged {item}", "department": "support"},
               {"status": "transferring", "wait_minutes": d.pick(2, 4, 6)})
    d.say(f"Of course. I'm transferring you to our support team, the wait is about {_minutes(d, t['wait_minutes'])}.")


# -- ride hailing -------------------------------------------------------------------------------


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
        d.say(f"Booked. {ride['driver']} in a {ride['car']} will be there in {_minutes(d, ride['eta_minutes'])}.")
        return
    rest = riders.value - 4
    d.user("that's a lot. just send two standard cars instead", "hmm, can we do two regular cars instead?")
    a = d.call("request_ride", {**route, "ride_type": "standard", "passengers": 4}, _booked(d))
    b = d.call("request_ride", {**route, "ride_type": "standard", "passengers": rest}, _booked(d))
    d.say(f"Two cars are booked: {a['driver']} in a {a['car']} for four, in {_minutes(d, a['eta_minutes'])}, and "
          f"{b['driver']} in a {b['car']} for the other {d.words(rest)}, in {_minutes(d, b['eta_minutes'])}.")


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
          f"{_minutes(d, ride['eta_minutes'])}. Your ride number is {d.spell(ride['ride_id'])}.")


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
    d.say(f"Found it. {r['driver']} is about {_minutes(d, r['eta_minutes'])} from {r['pickup']}.")
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
          f"{_minutes(d, ride['eta_minutes'])}. The ride number is {d.spell(ride['ride_id'])}.")
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
    d.say(f"Before I cancel: {r['driver']} is only {_minutes(d, r['eta_minutes'])} away, so cancelling now has a "
          f"{d.money_words(fee)} fee. Do you still want to cancel?")
    if d.chance(0.5):
        d.user("oh, never mind then, I'll just take it", "hmm, no, I'll ride. keep it", filler=0.3)
        d.say(f"No problem, the ride stays booked. {r['driver']} will be there in a {r['car']} in about "
              f"{_minutes(d, r['eta_minutes'])}.")
        return
    d.user("yes, cancel it anyway", "that's fine, cancel it", filler=0.3)
    c = d.call("cancel_ride", {"ride_id": ride_id, "reason": "plans_changed"}, {"status": "cancelled", "fee": fee})
    d.say(f"Ride {d.spell(ride_id)} is cancelled. The {d.money_words(c['fee'])} fee goes on your card ending in "
          f"{d.spell(r['card_last4'])}.")
