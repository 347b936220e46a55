"""E-commerce order callers (order support): status, returns, address changes, cancels, refunds.

Held out: track_refund (its tool is called by no train goal). The later train goals add a wrong
order number rechecked, two items returned, a ZIP code rejected and fixed, two lookups before a
cancel, a cancel that fails first, a return-window check and a replacement request."""

from __future__ import annotations

from turnspec.workloads.catalog import domain, load_tools, scenario
from turnspec.workloads.dialogue import CITIES, Dialogue
from turnspec.workloads.spoken import duration_words, with_article

SHOP = domain("ecommerce", ("Northwind Outfitters", "Pinecone Home Goods", "Brightside Electronics"),
              "order support", load_tools("ecommerce"))
REASONS = ("wrong_size", "damaged", "not_as_described", "changed_mind")
ITEMS = ("rain jacket", "hiking boots", "wool sweater", "desk lamp", "throw blanket", "bluetooth speaker", "coffee grinder")
SINGLE = tuple(i for i in ITEMS if not i.endswith("s"))  # "it arrived broken" reads right
CARRIERS = ("UPS", "FedEx", "USPS")


# -- first goals (workload 1) -------------------------------------------------------------------


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


@scenario(SHOP, "status_then_cancel")
def status_then_cancel(d: Dialogue) -> None:
    order, item = d.digits(7), d.pick(*ITEMS)
    d.user(f"has my {item} shipped yet? order {order}", f"I ordered a {item}, order number {order}. did it go out?")
    d.call("get_order_status", {"order_number": order.value}, {"status": "processing", "ships_by": d.day(3).value})
    d.say(f"Your {item} hasn't shipped yet; it's still being packed. Would you like to keep it or cancel?")
    d.user("actually, just cancel it", "you know what, cancel it please", filler=0.3)
    d.call("cancel_order", {"order_number": order.value}, {"status": "cancelled", "refund": "original_payment"})
    d.say(f"Order {d.spell(order.value[-4:])} is cancelled. The refund goes back to your original payment method.")


# -- more train goals (workload 1): retries, changes of mind, several lookups -------------------


@scenario(SHOP, "order_not_found_recheck")
def order_not_found_recheck(d: Dialogue) -> None:
    """A wrong order number finds nothing; the right one returns items, carrier and dates."""
    wrong, order = d.digits(7), d.digits(7)
    d.user(f"when is my order coming? the number is {wrong}", f"I'm trying to track order {wrong}")
    d.call("get_order_status", {"order_number": wrong.value}, {"status": "not_found"})
    d.say(f"I can't find an order {d.spell(wrong.value)}. Could you check the number? It's the seven digits in your "
          "confirmation email.", "Hmm, that number doesn't match an order. Can you read it to me again?")
    d.user(f"oh, I read the wrong email. it's {order}", f"sorry about that, try {order}", filler=0.3)
    items = d.rng.sample(ITEMS, 2)
    r = d.call("get_order_status", {"order_number": order.value},
               {"status": "in_transit", "items": items, "carrier": d.pick("UPS", "FedEx", "USPS"),
                "shipped_on": d.days_ago(d.rng.randint(1, 3)), "eta": d.day(6).value})
    d.say(f"Found it. Your {r['items'][0]} and {r['items'][1]} shipped {d.date_words(r['shipped_on'])} with "
          f"{r['carrier']} and should arrive {d.date_words(r['eta'])}.")


@scenario(SHOP, "return_two_items")
def return_two_items(d: Dialogue) -> None:
    """The order's items come from a lookup; the caller returns both, or changes their mind and keeps one."""
    order = d.digits(7)
    d.user(f"I got order {order} and there's a problem with what came", f"something's wrong with my delivery, order {order}")
    a, b = d.rng.sample([i for i in ITEMS if not i.endswith("s")], 2)
    prices = [d.money(20, 90).value, d.money(20, 90).value]
    r = d.call("get_order_status", {"order_number": order.value},
               {"status": "delivered", "delivered_on": d.days_ago(d.rng.randint(1, 9)),
                "items": [{"item": a, "price": prices[0]}, {"item": b, "price": prices[1]}], "return_window_days": 30})
    d.say(f"I see it was delivered {d.date_words(r['delivered_on'])}, with {with_article(a)} and {with_article(b)}. What's the problem?")
    reason, why = d.pick(("not_as_described", "looks nothing like the picture"), ("changed_mind", "isn't what I need after all"))
    d.user(f"the {a} arrived broken and the {b} {why}. can I send both back?",
           f"the {a} is damaged, and the {b} {why}. I want to return both")
    returns = [(a, "damaged", prices[0])]
    if d.chance(0.4):
        d.say(f"Yes, both are within the thirty day window. Should I start returns for the {a} and the {b}?")
        d.user(f"actually, I'll keep the {b}. just the {a}", f"hmm, you know what, I'll keep the {b}. only return the {a}")
    else:
        returns.append((b, reason, prices[1]))
    for item, reason, _ in returns:
        d.call("start_return", {"order_number": order.value, "item": item, "reason": reason},
               {"status": "return_started", "label_sent_to": "email", "refund_days": 5})
    refund = d.money_words(round(sum(p for *_, p in returns), 2))
    what = " and ".join(f"the {item}" for item, *_ in returns)
    d.say(f"Returns started for {what}. I've emailed the labels, and {refund} comes back to you within five days of "
          "receiving them.")


# -- workload 2 train goals (since=2) -----------------------------------------------------------


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
    d.say(f"Of course. I'm transferring you to our support team, the wait is about {duration_words(t['wait_minutes'])}.")

