"""E-commerce order and ride-hailing callers."""

from __future__ import annotations

from turnspec.workloads.catalog import domain, load_tools, scenario
from turnspec.workloads.dialogue import CITIES, Dialogue

REASONS = ("wrong_size", "damaged", "not_as_described", "changed_mind")

SHOP = domain("ecommerce", ("Northwind Outfitters", "Pinecone Home Goods", "Brightside Electronics"), "order support", load_tools("ecommerce"))
ITEMS = ("rain jacket", "hiking boots", "wool sweater", "desk lamp", "throw blanket", "bluetooth speaker", "coffee grinder")


@scenario(SHOP, "order_status")
def order_status(d: Dialogue) -> None:
    order = d.digits(7)
    d.user(f"where's my order? the number is {order}", f"I'm checking on order {order}", f"my package hasn't shown up, order {order}")
    r = d.call("get_order_status", {"order_number": order.value},
               d.pick({"status": "in_transit", "carrier": "UPS", "eta": d.day(5).value}, {"status": "delivered", "delivered_on": d.day(0).value}))
    if r["status"] == "in_transit":
        d.say(f"It's on the way with {r['carrier']} and should arrive {d.date_words(r['eta'])}.")
    else:
        d.say("It shows as delivered today. Could you check with neighbors or your building's mail room?")


@scenario(SHOP, "start_return")
def start_return(d: Dialogue) -> None:
    order, item, reason = d.digits(7), d.pick(*ITEMS), d.pick(*REASONS)
    why = {"wrong_size": "it doesn't fit", "damaged": "it arrived broken", "not_as_described": "it's not what the picture showed",
           "changed_mind": "I changed my mind"}[reason]
    d.user(f"I want to return the {item} from order {order}, {why}", f"hi, can I send back a {item}? {why}. order {order}")
    d.call("start_return", {"order_number": order.value, "item": item, "reason": reason},
           {"status": "return_started", "label_sent_to": "email", "refund_days": 5})
    d.say(f"Your return for the {item} is started. I've emailed a prepaid label; the refund takes about five days once we get it.")


@scenario(SHOP, "change_address")
def change_address(d: Dialogue) -> None:
    order, address, city, zip_code = d.digits(7), d.address(), d.pick(*CITIES), d.digits(5)
    d.user(f"can I change the shipping address on order {order}?", f"I moved, I need order {order} to go somewhere else")
    d.say("If it hasn't shipped yet, yes. What's the new address?")
    d.user(f"{address}, {city}, {zip_code}", f"it's {address} in {city}, zip {zip_code}")
    d.call("change_shipping_address", {"order_number": order.value, "street": address.value, "city": city, "zip_code": zip_code.value},
           {"status": "updated"})
    d.say(f"Updated. Your order will now ship to {address.value}, {city}.")


@scenario(SHOP, "cancel_order")
def cancel_order(d: Dialogue) -> None:
    order = d.digits(7)
    d.user(f"please cancel order {order}", f"I ordered something by mistake, order {order}, can you cancel it?")
    r = d.call("cancel_order", {"order_number": order.value}, d.pick({"status": "cancelled"}, {"status": "already_shipped"}))
    if r["status"] == "cancelled":
        d.say("It's cancelled, and you won't be charged.")
    else:
        d.say("It already shipped, so I can't cancel it, but you can return it free once it arrives.")


@scenario(SHOP, "track_refund", heldout=True)
def track_refund(d: Dialogue) -> None:
    order = d.digits(7)
    d.user(f"I returned something weeks ago and haven't got my money. order {order}", f"where's my refund for order {order}?")
    r = d.call("track_refund", {"order_number": order.value}, {"status": "issued", "amount": d.money(15, 250).value, "issued_on": d.day(3).value})
    d.say(f"Your refund of {d.money_words(r['amount'])} was issued {d.date_words(r['issued_on'])}; banks take three to five days to post it.")


PLACES = ("the airport", "Union Station", "the convention center", "Mercy Hospital", "the downtown library", "Lakeside Mall")

RIDES = domain("ride_hailing", ("ZipRide", "Metro Cabs", "Hopper Rides"), "rider support", load_tools("ride_hailing"))


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


@scenario(SHOP, "status_then_cancel")
def status_then_cancel(d: Dialogue) -> None:
    order, item = d.digits(7), d.pick(*ITEMS)
    d.user(f"has my {item} shipped yet? order {order}", f"I ordered a {item}, order number {order}. did it go out?")
    d.call("get_order_status", {"order_number": order.value}, {"status": "processing", "ships_by": d.day(3).value})
    d.say(f"Your {item} hasn't shipped yet; it's still being packed. Would you like to keep it or cancel?")
    d.user("actually, just cancel it", "you know what, cancel it please", filler=0.3)
    d.call("cancel_order", {"order_number": order.value}, {"status": "cancelled", "refund": "original_payment"})
    d.say(f"Order {d.spell(order.value[-4:])} is cancelled. The refund goes back to your original payment method.")


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
