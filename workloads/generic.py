"""Generic chat prompts (no tools): small talk and quick questions a voice assistant gets.
They measure plain-text speed and keep a speculator from over-fitting to tool calls."""

from __future__ import annotations

from turnspec.workloads.conversation import Conversation

SYSTEM = ("You are a friendly voice assistant. Your replies are spoken aloud: answer in one to three "
          "short sentences, with no lists or formatting.")

# (scenario key, template, fillers): each template is expanded with every filler.
TEMPLATES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("fact", "um, tell me a fun fact about {}", ("octopuses", "the moon", "honeybees", "volcanoes", "penguins",
     "the ocean", "ancient Rome", "coffee", "elephants", "lightning", "the human heart", "Mount Everest", "sharks",
     "the Sahara", "owls", "tomatoes", "the Great Wall of China")),
    ("howto", "how do I {}?", ("boil an egg", "tie a tie", "get a wine stain out of a shirt", "fall asleep faster",
     "keep basil alive", "clean a cast iron pan", "start running", "make cold brew", "fix a squeaky door",
     "say no politely", "remember names better", "lower my phone's screen time", "make a paper airplane",
     "keep my car battery from dying", "ripen an avocado faster", "jump start a car")),
    ("explain", "can you explain {} in simple words?", ("what inflation is", "how vaccines work", "why the sky is blue",
     "what a black hole is", "how a credit score works", "what compound interest is", "how tides work",
     "what an index fund is", "how noise cancelling works", "why leaves change color")),
    ("recommend", "uh, what's a good {}?", ("book for a long flight", "movie for a rainy night", "board game for four people",
     "podcast about history", "houseplant for low light", "gift for my dad", "stretch for a sore back",
     "breakfast when I'm in a rush", "name for a golden retriever", "song to wake up to")),
    ("cook", "what can I make for dinner with {}?", ("eggs and spinach", "chicken and rice", "pasta and canned tomatoes",
     "tofu and broccoli", "potatoes and cheese", "black beans and tortillas", "leftover salmon", "ground beef and onions")),
    ("translate", "how do you say {} in {}?", ()),
    ("compare", "what's the difference between {}?", ("a latte and a cappuccino", "weather and climate", "a virus and bacteria",
     "baking soda and baking powder", "a crocodile and an alligator", "stocks and bonds", "jam and jelly", "RAM and storage",
     "a hurricane and a typhoon", "a frog and a toad", "affect and effect", "a cold and the flu")),
    ("plan", "help me plan {}", ("a quiet weekend at home", "a picnic for six", "a birthday dinner", "a day trip to the beach",
     "a study schedule for finals", "a week of easy lunches", "a morning routine")),
    ("chat", "{}", ("hey, how's your day going?", "I'm so tired today", "tell me a joke", "what should I do this weekend?",
     "I just got a new puppy!", "give me some motivation to go to the gym", "say something nice", "I can't decide what to eat",
     "what's a good question to ask on a first date?", "tell me a short story about a dragon",
     "I'm bored, entertain me", "I had a rough day at work", "what's your favorite color?", "can you cheer me up?",
     "I'm nervous about my exam", "sing me something", "it's my birthday today!", "I can't sleep",
     "what's something interesting I could learn today?", "do you like music?")),
    ("math", "what's {}?", ("fifteen percent of eighty", "twelve times fourteen", "a good tip on sixty two dollars",
     "half of three quarters", "two hundred divided by eight", "the square root of one forty four")),
    ("define", "what does {} mean?", ("serendipity", "ubiquitous", "the word quorum", "F O M O", "per diem",
     "carpe diem", "a red herring", "the phrase break a leg", "bona fide", "a blue moon")),
    ("tips", "any tips for {}?", ("a job interview tomorrow", "flying with a toddler", "my first marathon",
     "saving money on groceries", "staying focused when working from home", "a long road trip",
     "learning guitar", "sleeping in a hot room", "talking to a shy teenager", "packing light")),
    ("whyis", "why {}?", ("do cats purr", "do we yawn", "is the ocean salty", "do onions make you cry",
     "do we have leap years", "does bread go stale", "do airplanes leave white trails", "is ice slippery")),
    ("history", "who was {}?", ("Ada Lovelace", "Nikola Tesla", "Harriet Tubman", "Marie Curie", "Cleopatra",
     "Leonardo da Vinci", "Frida Kahlo", "Alan Turing")),
    ("riddle", "give me {}", ("a riddle", "a tongue twister", "a fun word of the day", "a quick brain teaser",
     "a compliment", "a random fact", "a quote about courage", "a short poem about rain", "a haiku about coffee",
     "a pep talk", "a dinner idea", "a two minute workout")),
    ("opinion", "do you think {}?", ("cats or dogs are better", "it's worth learning Latin", "I should repaint my room blue",
     "pineapple belongs on pizza", "it's too late to learn piano", "mornings are better than nights",
     "robots will cook for us someday", "I should get a bike or a scooter")),
    ("travel", "what should I see in {}?", ("Paris", "Tokyo", "New York", "Mexico City", "Rome", "Cape Town", "Seattle",
     "Lisbon", "Chicago", "Sydney")),
    ("health", "is it okay to {}?", ("drink coffee at night", "run every day", "skip breakfast", "nap after lunch",
     "stretch before lifting", "eat eggs every day", "work out when I'm sore", "take a cold shower")),
    ("convert", "how many {}?", ("cups are in a quart", "ounces are in a pound", "feet are in a mile",
     "teaspoons are in a tablespoon", "minutes are in a day", "kilometers is ten miles")),
    # Appended 2026-11-30 (append only: ids are positional, and the train / held-out split of a
    # prompt is a hash of its id, so inserting above would move held-out prompts into train).
    ("howworks", "how does {} work?", ("a microwave", "a refrigerator", "wifi", "GPS", "a solar panel",
     "a touch screen", "an electric car", "a thermostat", "a vaccine", "a dishwasher", "a rainbow",
     "a compass", "a smoke detector", "a hybrid engine", "an elevator", "a 3D printer", "Bluetooth",
     "a heat pump", "noise cancelling", "a credit card chip")),
    ("capital", "what's the capital of {}?", ("Australia", "Canada", "Brazil", "Kenya", "Norway", "Vietnam",
     "Peru", "Morocco", "New Zealand", "Portugal", "Egypt", "Thailand", "Argentina", "Ireland", "South Korea",
     "Chile", "Turkey", "Finland", "Colombia", "Switzerland")),
    ("howlong", "how long does it take to {}?", ("boil pasta", "walk a mile", "fly from New York to London",
     "learn to swim", "charge an electric car", "bake a potato", "grow tomatoes from seed", "get over jet lag",
     "read a three hundred page book", "hard boil an egg", "thaw a frozen turkey", "drive across Texas",
     "build a habit", "dry a pair of jeans", "steep green tea", "get a passport")),
    ("healthy", "is {} good for you?", ("dark chocolate", "oatmeal", "sparkling water", "peanut butter",
     "green tea", "brown rice", "coconut oil", "red wine", "popcorn", "orange juice", "cheese", "honey",
     "a standing desk", "walking after dinner", "intermittent fasting", "yoga")),
    ("rhyme", "what rhymes with {}?", ("orange", "silver", "moon", "coffee", "happy", "river", "light",
     "dream", "summer", "love", "night", "rain")),
    ("synonym", "what's another word for {}?", ("happy", "tired", "big", "smart", "beautiful", "angry",
     "fast", "funny", "important", "scared", "interesting", "difficult")),
    ("pack", "I'm going {}, what should I pack?", ("camping for two nights", "to the beach for a week",
     "skiing", "on a business trip", "to a wedding out of town", "hiking in the rain", "to Iceland in winter",
     "on a cruise", "to a music festival", "to visit my grandparents")),
    ("rules", "can you explain the rules of {}?", ("chess", "soccer", "basketball", "poker", "pickleball",
     "tennis", "baseball", "rock paper scissors", "Monopoly", "golf", "volleyball", "bowling")),
    ("plot", "what's {} about?", ("Pride and Prejudice", "The Odyssey", "Moby Dick", "Romeo and Juliet",
     "The Great Gatsby", "Frankenstein", "Hamlet", "The Hobbit", "Don Quixote", "Little Women",
     "Jane Eyre", "The Little Prince")),
    ("animal", "what do {} eat?", ("pandas", "hedgehogs", "flamingos", "koalas", "goldfish", "rabbits",
     "bats", "sea turtles", "hummingbirds", "giraffes", "earthworms", "polar bears")),
    ("feel", "{}, what should I do?", ("I feel stressed about work", "I can't focus today",
     "I'm feeling lonely", "I'm nervous about a presentation", "I overslept and I'm late",
     "I forgot my friend's birthday", "I'm stuck in traffic", "my neighbor is really loud",
     "I lost my keys", "my phone battery is almost dead", "I spilled coffee on my laptop",
     "I'm feeling unmotivated")),
    ("year", "when did {}?", ("the first moon landing happen", "the Titanic sink", "the Berlin Wall fall",
     "the internet start", "World War Two end", "the first iPhone come out", "people start using paper money",
     "the Olympics begin", "the printing press appear", "the first airplane fly")),
    ("suggest", "suggest {}", ("a name for my cat", "a hobby I can do at home", "a fun thing to do on a rainy day",
     "a healthy snack", "a way to relax before bed", "a good first car", "a houseplant that's hard to kill",
     "a gift for a coworker", "a short book to read this weekend", "a game for a long car ride",
     "a theme for a birthday party", "a quick warm up before running")),
    ("diff2", "is it better to {}?", ("rent or buy a house", "study in the morning or at night",
     "run on a treadmill or outside", "shower in the morning or at night", "pay off debt or save first",
     "buy a laptop or a tablet", "take the stairs or the elevator", "drink coffee or tea in the morning",
     "learn Spanish or French", "fly or drive for a five hour trip")),
)
PHRASES = ("thank you", "good morning", "where is the train station", "I'm allergic to peanuts", "how much does this cost")
LANGUAGES = ("Spanish", "French", "Japanese", "German")


def _user_turns() -> list[tuple[str, str]]:
    turns: list[tuple[str, str]] = []
    for key, template, fills in TEMPLATES:
        if key == "translate":
            turns += [(key, template.format(p, lang)) for p in PHRASES for lang in LANGUAGES]
        else:
            turns += [(key, template.format(fill)) for fill in fills]
    return turns


def generic_prompts(n: int | None = None) -> list[Conversation]:
    """The generic prompts (>= 400) as one-user-turn conversations without tools, in a fixed
    order; n keeps the first n."""
    turns = _user_turns()
    chosen = turns if n is None else turns[:n]
    return [
        Conversation(f"generic-{i:04d}", "generic", "generic", f"generic.{key}", [],
                     [{"role": "system", "content": SYSTEM}, {"role": "user", "content": text}])
        for i, (key, text) in enumerate(chosen)
    ]
