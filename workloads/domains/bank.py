"""Bank callers (member services): balances, transactions, transfers, lost cards.

Every account question starts with an identity check (`_verify`). Held out: lost_card
(report_lost_card is called by no train goal). The later train goals add balances before a
transfer, a declined transfer retried smaller, a verification that fails once, an amount derived
from a balance, a pending hold against a posted charge, two lookups before one reply and a
search widened after finding nothing."""

from __future__ import annotations

from datetime import timedelta

from turnspec.workloads import spoken
from turnspec.workloads.catalog import domain, load_tools, scenario
from turnspec.workloads.dialogue import Dialogue, days_after

BANK = domain("bank", ("Harbor Federal Credit Union", "Summit Savings Bank", "First Prairie Bank"), "member services",
              load_tools("bank"))
EMPLOYERS = ("Acme Logistics", "Riverside School District", "Northwind Health", "Bluebird Cafe", "Metro Transit")
SHOPS = ("Corner Market", "Shell", "Netflix", "City Parking", "Blue Bottle Coffee", "Target", "Walgreens")


def _verify(d: Dialogue) -> None:
    last4, dob = d.digits(4), d.birthday()
    d.say("I can help with that. First, what are the last four digits of your account, and your date of birth?",
          "Sure. To verify you, can I get the last four of your account number and your birthday?")
    d.user(f"it's {last4}, and I was born {dob}", f"{last4}. birthday is {dob}", f"uh, last four {last4}, date of birth {dob}")
    d.call("verify_identity", {"account_last_four": last4.value, "date_of_birth": dob.value}, {"verified": True})


def _verify_retry(d: Dialogue) -> None:
    """Verification; half the time the caller first gives the card's last four, which fails."""
    last4, dob = d.digits(4), d.birthday()
    if not d.chance(0.5):
        _verify(d)
        return
    card = d.digits(4)
    d.say("Sure. First, can I get the last four digits of your account and your date of birth?")
    d.user(f"the last four are {card}, and my birthday is {dob}", f"{card}, born {dob}")
    d.call("verify_identity", {"account_last_four": card.value, "date_of_birth": dob.value},
           {"verified": False, "reason": "details_do_not_match"})
    d.say("I'm sorry, those details don't match our records. Is that the last four of your card, maybe? "
          "I need the last four of the account number, which is on your statement.")
    d.user(f"oh, yeah, that was the card. the account ends in {last4}", f"sorry, my mistake. account ends {last4}", filler=0.3)
    d.call("verify_identity", {"account_last_four": last4.value, "date_of_birth": dob.value}, {"verified": True})


def _pct(rate: float) -> str:
    whole, _, frac = f"{rate:g}".partition(".")
    return spoken.words(int(whole)) + (" point " + " ".join(spoken.words(int(c)) for c in frac) if frac else "") + " percent"


def _shops(d: Dialogue, n: int, within: int) -> list[dict]:
    return [{"merchant": s, "amount": d.money(3, 90).value, "date": d.days_ago(d.rng.randint(0, within)), "type": "purchase"}
            for s in d.rng.sample(SHOPS, n)]


# -- first goals (workload 1) -------------------------------------------------------------------


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


# -- more train goals (workload 1): retries, changes of mind, several lookups -------------------


@scenario(BANK, "cover_low_checking")
def cover_low_checking(d: Dialogue) -> None:
    """Both balances first, then a transfer from savings to cover checking."""
    d.user("I think my checking is running low. can you tell me both my checking and savings balances?",
           "how much do I have in checking and in savings? I might need to move some over",
           "I've got a big payment coming out, can you check my balances?")
    _verify(d)
    chk = d.call("get_balance", {"account": "checking"}, {"account": "checking", "balance": d.money(5, 90).value, "currency": "USD"})
    sav = d.call("get_balance", {"account": "savings"}, {"account": "savings", "balance": d.money(900, 9000).value, "currency": "USD"})
    d.say(f"Thanks, you're verified. Checking has {d.money_words(chk['balance'])} and savings has "
          f"{d.money_words(sav['balance'])}. Would you like to move some over?")
    amount = d.money(100, 800, cents=False)
    d.user(f"yes, move {d.fix(amount, d.money(100, 800, cents=False))} from savings into checking",
           f"okay, put {amount} into checking from savings", filler=0.3)
    new = round(chk["balance"] + amount.value, 2)
    r = d.call("transfer_funds", {"from_account": "savings", "to_account": "checking", "amount": amount.value},
               {"status": "completed", "reference": d.code(8).value, "new_checking_balance": new})
    d.say(f"Done. {d.money_words(amount.value).capitalize()} moved to checking, which now has "
          f"{d.money_words(r['new_checking_balance'])}. Reference {d.spell(r['reference'][:4])}.")


@scenario(BANK, "transfer_declined_retry")
def transfer_declined_retry(d: Dialogue) -> None:
    """A transfer is declined for insufficient funds; the caller moves a smaller amount."""
    src = d.pick("checking", "savings")
    dst = "savings" if src == "checking" else "checking"
    amount = d.money(1500, 5000, cents=False)
    d.user(f"please transfer {amount} from {src} to {dst}", f"I need to move {amount} out of {src} into {dst}")
    _verify(d)
    args = {"from_account": src, "to_account": dst, "amount": amount.value}
    r = d.call("transfer_funds", args, {"status": "declined", "reason": "insufficient_funds",
                                        "available_balance": d.money(200, int(amount.value) - 100).value})
    d.say(f"That transfer didn't go through: your {src} account only has {d.money_words(r['available_balance'])} "
          "available. Would you like to move a smaller amount?")
    smaller = int(r["available_balance"]) // 100 * 100
    d.user(f"oh, okay. make it {d.words(smaller)} dollars then", f"hmm, just do {d.words(smaller)} dollars",
           f"fine, move {d.words(smaller)} dollars instead")
    done = d.call("transfer_funds", {**args, "amount": float(smaller)}, {"status": "completed", "reference": d.code(8).value})
    d.say(f"Done: {d.money_words(smaller)} moved from {src} to {dst}. Your reference is {d.spell(done['reference'][:4])}.")


# -- workload 2 train goals (since=2) -----------------------------------------------------------


@scenario(BANK, "paycheck_arrived", since=2)
def paycheck_arrived(d: Dialogue) -> None:
    """Did the direct deposit land? Verification may fail once; a short lookup finds it posted, pending or absent."""
    employer, days = d.pick(*EMPLOYERS), d.pick(2, 3, 5)
    d.user("has my paycheck hit my checking yet?", "I'm checking if my direct deposit came into checking",
           "did my pay get deposited to my checking account? it's usually there by now")
    _verify_retry(d)
    pay, state = d.money(600, 3200), d.pick("posted", "posted", "pending", "none")
    deposit = {"merchant": f"Direct deposit {employer}", "amount": pay.value, "date": d.days_ago(d.rng.randint(0, 1)),
               "type": "deposit", "status": state}
    if state == "pending":
        deposit["available_on"] = days_after(d.today.isoformat(), 1)
    r = d.call("list_transactions", {"account": "checking", "days": days},
               {"transactions": _shops(d, 2, days - 1) + ([deposit] if state != "none" else [])})
    if state == "none":
        seen = r["transactions"]
        d.say(f"Thanks, you're verified. I don't see any deposit in the last {d.words(days)} days, only {seen[0]['merchant']} "
              f"and {seen[1]['merchant']}. It may be worth checking the pay date with your employer.")
        return
    dep = r["transactions"][-1]
    if state == "pending":
        d.say(f"Thanks, you're verified. Your deposit from {employer} for {d.money_words(dep['amount'])} is pending "
              f"and will be available {d.date_words(dep['available_on'])}.")
        return
    d.say(f"Thanks, you're verified. Yes, {d.money_words(dep['amount'])} from {employer} posted on "
          f"{d.date_words(dep['date'])}.")
    d.user("great, so what's my checking balance now?", "nice. and how much is in checking with that?", filler=0.3)
    b = d.call("get_balance", {"account": "checking"},
               {"account": "checking", "balance": round(dep["amount"] + d.money(10, 900).value, 2), "currency": "USD"})
    d.say(f"With that deposit, your checking balance is {d.money_words(b['balance'])}.")


@scenario(BANK, "move_part_of_checking", since=2)
def move_part_of_checking(d: Dialogue) -> None:
    """No amount given: the agent asks; the caller wants half, or all but a cushion, so a balance lookup comes first."""
    d.user("I want to move some money over to savings", "can you put some of my checking into savings?",
           "I'd like to transfer from checking to savings")
    _verify(d)
    d.say("Thanks, you're verified. How much would you like to move from checking to savings?")
    half, cushion = d.chance(0.5), d.money(200, 500, cents=False)
    if half:
        d.user("half of whatever's in checking", "half my checking balance, I guess", "let's say half of it")
    else:
        d.user(f"everything except {cushion}, I want to keep that for bills", f"leave {cushion} in checking and move the rest")
    r = d.call("get_balance", {"account": "checking"}, {"account": "checking", "balance": d.money(700, 6000).value, "currency": "USD"})
    amount = round(r["balance"] / 2, 2) if half else round(r["balance"] - cushion.value, 2)
    part = "half is" if half else f"leaving {d.money_words(cushion.value)} means moving"
    d.say(f"Checking has {d.money_words(r['balance'])}, so {part} {d.money_words(amount)}. Should I go ahead?")
    if d.chance(0.4):
        amount = float(int(amount) // 100 * 100)
        d.user(f"hmm, just round it down to {d.words(int(amount))} dollars", f"make it an even {d.words(int(amount))} dollars")
    else:
        d.user("yes, go ahead", "yep, do it", "sounds good", filler=0.3)
    t = d.call("transfer_funds", {"from_account": "checking", "to_account": "savings", "amount": amount},
               {"status": "completed", "reference": d.code(8).value, "new_checking_balance": round(r["balance"] - amount, 2)})
    d.say(f"Done: {d.money_words(amount)} moved to savings. Checking now has {d.money_words(t['new_checking_balance'])}. "
          f"Reference {d.spell(t['reference'][:4])}.")


@scenario(BANK, "pending_double_charge", since=2)
def pending_double_charge(d: Dialogue) -> None:
    """Charged twice? The lookup shows a pending hold beside the posted charge, or a real duplicate; an offer is declined."""
    merchant, amount = d.pick("Shell", "Hilton Garden Inn", "Uber Eats", "Chevron", "Target"), d.money(15, 180)
    d.user(f"I think {merchant} charged me twice, {amount} both times", f"there are two {merchant} charges on my checking, can you look?",
           f"why do I have a double charge from {merchant}? it's {amount}")
    _verify(d)
    when, dupe = d.days_ago(d.rng.randint(0, 3)), d.chance(0.35)
    second = {"merchant": merchant, "amount": amount.value, "date": when, "status": "posted" if dupe else "pending"}
    if not dupe:
        second["drops_off_by"] = days_after(when, d.pick(3, 5))
    r = d.call("list_transactions", {"account": "checking", "days": d.pick(7, 10, 14)},
               {"transactions": [{"merchant": merchant, "amount": amount.value, "date": when, "status": "posted"}, second,
                                 *_shops(d, 1, 6)]})
    p = r["transactions"][1]
    say = f"Thanks, you're verified. I see two {merchant} charges of {d.money_words(amount.value)} on {d.date_words(when)}. "
    if dupe:
        d.say(say + "Both have posted, so it does look like a duplicate. Would you like me to connect you with our team "
                    "to dispute it?")
        d.user("no, I'll call the store first", "not yet, let me ask the merchant to refund it", filler=0.3)
        d.say("That makes sense. If they can't fix it, call us back and we'll open a dispute.")
        return
    d.say(say + f"One has posted and the other is only a pending hold, which should drop off by {d.date_words(p['drops_off_by'])}.")
    if d.chance(0.5):
        d.user("so I'm not paying twice?", "okay so that money comes back?", filler=0.3)
        d.say(f"Right, you'll only pay the posted {d.money_words(amount.value)}. The hold just goes away on its own.")
    else:
        d.user("and what if it doesn't go away by then?", "what if it's still there next week?", filler=0.3)
        d.say(f"If the hold is still there after {d.date_words(p['drops_off_by'])}, call us and we'll open a dispute.")


@scenario(BANK, "savings_interest_and_rate", since=2)
def savings_interest_and_rate(d: Dialogue) -> None:
    """Savings balance and the last interest credit, two lookups in a row; the rate follow-up is read from the first."""
    d.user("how much interest did my savings earn last month?", "can you tell me my savings balance and my last interest payment?",
           "I want to see what my savings account is earning")
    _verify(d)
    apy = d.pick(0.5, 2.5, 3.75, 4.1, 4.25)
    b = d.call("get_balance", {"account": "savings"},
               {"account": "savings", "balance": d.money(1500, 9500).value, "currency": "USD", "apy": apy})
    credited = (d.today.replace(day=1) - timedelta(days=1)).isoformat()
    interest = {"merchant": "Interest payment", "amount": round(b["balance"] * apy / 1200, 2), "date": credited, "type": "deposit"}
    r = d.call("list_transactions", {"account": "savings", "days": 31}, {"transactions": [interest]})
    i = r["transactions"][0]
    d.say(f"Thanks, you're verified. Your savings balance is {d.money_words(b['balance'])}, and the last interest payment "
          f"was {d.money_words(i['amount'])} on {d.date_words(i['date'])}.")
    d.user("and what rate am I getting on that?", "what's the interest rate on my savings?", "is that a good rate? what is it?")
    d.say(f"Your savings account earns {_pct(b['apy'])} APY, paid monthly.")


@scenario(BANK, "find_older_charge", since=2)
def find_older_charge(d: Dialogue) -> None:
    """A subscription isn't in the last thirty days; the caller agrees to search back ninety days, where it turns up."""
    merchant = d.pick("Planet Fitness", "Adobe", "Costco Membership", "Amazon Prime", "Hulu", "Geico")
    d.user(f"when did {merchant} last charge me, and how much?", f"I'm trying to find my last {merchant} payment on checking",
           f"can you tell me when my {merchant} payment came out?")
    _verify(d)
    r = d.call("list_transactions", {"account": "checking", "days": 30}, {"transactions": _shops(d, 2, 29)})
    seen = r["transactions"]
    d.say(f"Thanks, you're verified. I don't see {merchant} in the last thirty days, only {seen[0]['merchant']} and "
          f"{seen[1]['merchant']}. Would you like me to look back ninety days?")
    d.user("yes, go back as far as you can", "sure, check the last three months", "yeah please", filler=0.3)
    charge = {"merchant": merchant, "amount": d.money(10, 140).value, "date": d.days_ago(d.rng.randint(35, 85)), "type": "purchase"}
    r = d.call("list_transactions", {"account": "checking", "days": 90}, {"transactions": [charge, *_shops(d, 1, 89)]})
    c = r["transactions"][0]
    d.say(f"Found it: {merchant} charged {d.money_words(c['amount'])} on {d.date_words(c['date'])}. "
          "It's the only one in the last ninety days.")

