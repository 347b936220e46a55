"""Bank and utility callers."""

from __future__ import annotations

from turnspec.workloads.catalog import domain, load_tools, scenario
from turnspec.workloads.dialogue import Dialogue

BANK = domain("bank", ("Harbor Federal Credit Union", "Summit Savings Bank", "First Prairie Bank"), "member services", load_tools("bank"))


def _verify(d: Dialogue) -> None:
    last4, dob = d.digits(4), d.birthday()
    d.say("I can help with that. First, what are the last four digits of your account, and your date of birth?",
          "Sure. To verify you, can I get the last four of your account number and your birthday?")
    d.user(f"it's {last4}, and I was born {dob}", f"{last4}. birthday is {dob}", f"uh, last four {last4}, date of birth {dob}")
    d.call("verify_identity", {"account_last_four": last4.value, "date_of_birth": dob.value}, {"verified": True})


@scenario(BANK, "check_balance")
def check_balance(d: Dialogue) -> None:
    account = d.pick("checking", "savings")
    d.user(f"what's my {account} balance?", f"I want to check how much is in my {account}", f"can you tell me my {account} account balance")
    _verify(d)
    r = d.call("get_balance", {"account": account}, {"account": account, "balance": d.money(20, 9000).value, "currency": "USD"})
    d.say(f"Thanks, you're verified. Your {account} balance is {d.money_words(r['balance'])}.")


@scenario(BANK, "recent_transactions")
def recent_transactions(d: Dialogue) -> None:
    days = d.pick(3, 7, 14, 30)
    span = {3: "the last three days", 7: "this past week", 14: "the last two weeks", 30: "the last month"}[days]
    d.user(f"can you read me my checking transactions from {span}?", f"I see a charge I don't recognize, what came out in {span}?")
    _verify(d)
    shops = d.rng.sample(["Corner Market", "Shell", "Netflix", "City Parking", "Blue Bottle Coffee", "Target"], 2)
    r = d.call("list_transactions", {"account": "checking", "days": days},
               {"transactions": [{"merchant": s, "amount": d.money(3, 120).value} for s in shops]})
    t = r["transactions"]
    d.say(f"In {span} I see {t[0]['merchant']} for {d.money_words(t[0]['amount'])} and {t[1]['merchant']} for "
          f"{d.money_words(t[1]['amount'])}. Does one of those look wrong?")


@scenario(BANK, "transfer_funds")
def transfer_funds(d: Dialogue) -> None:
    src = d.pick("checking", "savings")
    dst = "savings" if src == "checking" else "checking"
    amount = d.money(20, 2000, cents=d.chance(0.3))
    said = d.fix(amount, d.money(20, 2000, cents=False))
    d.user(f"I'd like to move {said} from {src} to {dst}", f"transfer {said} from my {src} into {dst}, please")
    _verify(d)
    r = d.call("transfer_funds", {"from_account": src, "to_account": dst, "amount": amount.value},
               {"status": "completed", "reference": d.code(8).value})
    d.say(f"Done: {d.money_words(amount.value)} moved from {src} to {dst}. Reference {d.spell(r['reference'][:4])}.")


@scenario(BANK, "lost_card", heldout=True)
def lost_card(d: Dialogue) -> None:
    last4 = d.digits(4)
    d.user(f"I lost my debit card, the one ending in {last4}", f"my card got stolen, uh, it ends in {last4}, can you block it?")
    d.say("I'm sorry to hear that. Would you like me to send you a replacement card?")
    reissue = d.chance(0.8)
    d.user("yes please" if reissue else "no, not right now", filler=0.3)
    d.call("report_lost_card", {"card_last_four": last4.value, "reissue": reissue}, {"blocked": True, "replacement_days": 5 if reissue else None})
    d.say("Your card is blocked." + (" A new one will arrive in about five business days." if reissue else ""))


UTILITIES = domain("utilities", ("Riverside Power & Water", "Valley Gas and Electric", "Lakeshore Utilities"), "customer care", load_tools("utilities"))


@scenario(UTILITIES, "report_outage")
def report_outage(d: Dialogue) -> None:
    address, service = d.address(), d.pick("electric", "water", "gas")
    what = {"electric": "the power's out", "water": "we have no water", "gas": "the gas isn't working"}[service]
    d.user(f"{what} at {address}", f"hi, {what}. the address is {address}", f"um, {what} since this morning, {address}")
    r = d.call("report_outage", {"address": address.value, "service": service},
               {"ticket": d.code(6).value, "known_outage": d.chance(0.5), "estimated_restore": d.clock(13, 22).value})
    known = "There's a known outage in your area; " if r["known_outage"] else "I've opened a ticket; "
    d.say(f"{known}crews expect service back by about {d.time_words(r['estimated_restore'])}. Your ticket is {d.spell(r['ticket'])}.")


@scenario(UTILITIES, "pay_bill")
def pay_bill(d: Dialogue) -> None:
    account = d.digits(8)
    d.user(f"I want to pay my bill. account number {account}", f"can I make a payment? my account is {account}")
    r = d.call("get_account_balance", {"account_number": account.value},
               {"amount_due": d.money(40, 400).value, "due_date": d.day(20).value})
    d.say(f"Your balance is {d.money_words(r['amount_due'])}, due {d.date_words(r['due_date'])}. "
          "Should I charge the card on file or your bank account?")
    method = d.pick("card_on_file", "bank_account")
    d.user("the card on file is fine" if method == "card_on_file" else "take it from my bank account", filler=0.3)
    d.call("make_payment", {"account_number": account.value, "amount": r["amount_due"], "method": method},
           {"status": "paid", "confirmation": d.code(7).value})
    d.say(f"Payment of {d.money_words(r['amount_due'])} is done. Anything else?")


@scenario(UTILITIES, "start_service")
def start_service(d: Dialogue) -> None:
    address, day, service = d.address(), d.day(30), d.pick("electric", "water", "gas")
    d.user(f"I'm moving to {address} and need {service} turned on {day}",
           f"can you start {service} service at {address}, starting {day}?")
    r = d.call("start_service", {"address": address.value, "start_date": day.value, "service": service},
               {"status": "scheduled", "order": d.code(6).value, "deposit": d.pick(0, 50, 100)})
    extra = f" A deposit of {d.money_words(r['deposit'])} will be on your first bill." if r["deposit"] else ""
    d.say(f"You're set: {service} starts at {address.value} on {d.date_words(day.value)}.{extra}")


@scenario(UTILITIES, "payment_plan", heldout=True)
def payment_plan(d: Dialogue) -> None:
    account, months = d.digits(8), d.count(2, 12)
    d.user(f"I'm behind on my bill, can I split it up? account {account}", f"do you do payment plans? my account number is {account}")
    d.say("We can spread an overdue balance over two to twelve months. How many months would you like?")
    d.user(f"{months} months", f"let's do {months} months", f"uh, maybe {months}?")
    r = d.call("set_up_payment_plan", {"account_number": account.value, "months": months.value},
               {"status": "active", "monthly_payment": d.money(20, 150).value})
    d.say(f"Your plan is active: {d.money_words(r['monthly_payment'])} a month for {d.words(months.value)} months.")


@scenario(UTILITIES, "last_payment_check")
def last_payment_check(d: Dialogue) -> None:
    account, paid = d.digits(8), d.money(30, 250)
    d.user(f"did my payment of {paid} go through? account {account}",
           f"I paid {paid} last week and want to make sure it posted. account number {account}")
    r = d.call("get_account_balance", {"account_number": account.value},
               {"amount_due": d.pick(0.0, d.money(10, 90).value), "due_date": d.day(25).value,
                "last_payment": {"amount": paid.value, "status": "posted"}})
    due = d.money_words(r["amount_due"])
    rest = (f" {due[0].upper()}{due[1:]} is still due {d.date_words(r['due_date'])}."
            if r["amount_due"] else " Your balance is zero.")
    d.say(f"Yes, your payment of {d.money_words(r['last_payment']['amount'])} has posted.{rest}")
