"""Write the shipped accuracy task sets (harness/accuracy/tasks/*.jsonl), written for this project.

- cloze.jsonl (LAMBADA style): passages whose last word follows from the passage; the model must
  give that word the highest likelihood and produce it greedily.
- choice.jsonl (PIQA / HellaSwag style): a goal or a situation and 2 or 4 endings, one sensible.

Deterministic: rerunning gives the same files. Run: python scripts/make_tasks.py
"""

from __future__ import annotations

import json
import random
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "harness" / "accuracy" / "tasks"

PEOPLE = [
    ("Anna", "she", "her"),
    ("Ben", "he", "his"),
    ("Clara", "she", "her"),
    ("David", "he", "his"),
    ("Elena", "she", "her"),
    ("Farid", "he", "his"),
    ("Grace", "she", "her"),
    ("Hugo", "he", "his"),
    ("Ines", "she", "her"),
    ("Jonas", "he", "his"),
    ("Kira", "she", "her"),
    ("Leo", "he", "his"),
    ("Maya", "she", "her"),
    ("Nils", "he", "his"),
    ("Olga", "she", "her"),
    ("Pablo", "he", "his"),
]

# --- cloze ----------------------------------------------------------------------------------------

RECALL = [  # the last word appeared earlier in the passage
    "{n} left {s} umbrella by the front door so {p} would not forget it. It was raining in the morning, so on "
    "the way out {p} grabbed the umbrella",
    "{n} planted carrots in a corner of the garden in spring. {P} watered them every evening, and by the end of "
    "the summer {p} pulled up a whole basket of carrots",
    "{n} practised the violin for an hour every day. At the end of the year the school asked {o} to play a short "
    "piece on the violin",
    "When {n} moved to the city, {p} bought a small red bicycle. Every morning {p} rode to work on {s} bicycle",
    "{n} baked bread for the first time on Sunday. The whole flat smelled wonderful, and the neighbours asked "
    "for a slice of the bread",
    "{n} lost {s} keys somewhere in the park. After an hour of searching under every bench, {p} finally found the keys",
    "The old lighthouse stood at the end of the rocky coast. Every night {n} climbed the stairs to switch on the "
    "lamp at the top of the lighthouse",
    "{n} adopted a grey kitten from the shelter. The kitten slept all day, and at night {n} played with the kitten",
    "{n} kept {s} notes in a green notebook. Before the exam {p} read through every page of the notebook",
    "{n} sent a postcard to {s} grandmother from the seaside. A week later {s} grandmother called to say thank "
    "you for the postcard",
    "There was a tall oak tree behind {n}'s house. In summer {p} liked to read in the shade of the oak",
    "{n} ordered a new lamp for the desk. When the parcel arrived, {p} unpacked it and switched on the lamp",
    "{n} spent the weekend painting the fence white. On Monday the neighbours admired the freshly painted fence",
    "{n} borrowed a ladder from the neighbour to fix the roof. When the work was done, {p} returned the ladder",
    "{n} found an old map in the attic. {P} spread it out on the table and studied the map",
]

CAPITALS = [
    ("France", "Paris"),
    ("Italy", "Rome"),
    ("Japan", "Tokyo"),
    ("Germany", "Berlin"),
    ("Spain", "Madrid"),
    ("Egypt", "Cairo"),
    ("Russia", "Moscow"),
    ("Greece", "Athens"),
    ("Portugal", "Lisbon"),
    ("Ireland", "Dublin"),
    ("Norway", "Oslo"),
    ("Austria", "Vienna"),
    ("Poland", "Warsaw"),
    ("Kenya", "Nairobi"),
    ("Peru", "Lima"),
    ("Canada", "Ottawa"),
    ("China", "Beijing"),
    ("Thailand", "Bangkok"),
    ("Sweden", "Stockholm"),
    ("Hungary", "Budapest"),
]

OPPOSITES = [
    ("hot", "cold"),
    ("up", "down"),
    ("big", "small"),
    ("fast", "slow"),
    ("light", "dark"),
    ("happy", "sad"),
    ("open", "closed"),
    ("early", "late"),
    ("full", "empty"),
    ("strong", "weak"),
    ("wet", "dry"),
    ("rich", "poor"),
    ("young", "old"),
    ("hard", "soft"),
    ("loud", "quiet"),
]

SEQUENCES = {
    "days": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"],
    "months": [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ],
    "numbers": ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"],
}

FACTS = [
    "The sun rises in the east and sets in the west",
    "A triangle is a shape with three sides",
    "A spider has eight legs, while an insect has six legs",
    "Bees collect nectar from flowers to make honey",
    "When water gets cold enough, it turns into ice",
    "There are seven days in a week",
    "There are twelve months in a year",
    "People use an umbrella to stay dry in the rain",
    "Fish breathe through their gills and live in water",
    "In winter the days are short and the nights are long",
    "The moon goes around the earth, and the earth goes around the sun",
    "To see in the dark, you switch on a light",
    "Plants need sunlight and water to grow",
    "A doctor works in a hospital, and a teacher works in a school",
    "Cows eat grass and give us milk",
    "A square has four equal sides",
    "Birds build nests and lay eggs",
    "We hear with our ears and see with our eyes",
    "The opposite of north is south",
    "Ten plus ten is twenty",
    "After the night comes the morning",
    "A baby cat is called a kitten, and a baby dog is called a puppy",
    "Boats float on water, and planes fly in the sky",
    "People sleep in a bed and sit on a chair",
    "Lemons taste sour, and sugar tastes sweet",
    "Snow falls in winter, and flowers bloom in spring",
]


def cloze_items() -> list[dict]:
    items = []
    for index, template in enumerate(RECALL):
        for name, subject, possessive in (PEOPLE[index % 16], PEOPLE[(index + 7) % 16]):
            obj = "her" if subject == "she" else "him"
            items.append(template.format(n=name, p=subject, P=subject.capitalize(), s=possessive, o=obj))
    items += [f"The capital city of {country} is {city}" for country, city in CAPITALS]
    items += [f"The opposite of {a} is {b}" for a, b in OPPOSITES]
    for words in SEQUENCES.values():
        for start in range(0, len(words) - 4, 2):
            items.append(", ".join(words[start : start + 5]))
    items += FACTS
    return [{"text": text} for text in items]


# --- choice ---------------------------------------------------------------------------------------

PHYSICAL = [  # goal, sensible solution, wrong solution
    ("To cut a slice of bread,", "use a sharp knife.", "use a soup spoon."),
    ("To keep ice cream frozen,", "store it in the freezer.", "store it in the oven."),
    ("To dry wet hair quickly,", "use a hair dryer.", "use a fridge."),
    ("To boil water for tea,", "heat it in a kettle.", "pour it into a paper bag."),
    ("To open a locked door,", "turn the key in the lock.", "knock on the window of the car."),
    ("To see better when reading at night,", "turn on a lamp.", "close the curtains."),
    ("To clean a dirty floor,", "sweep it and then mop it.", "sprinkle sugar over it."),
    ("To stop a nosebleed,", "pinch the soft part of the nose and lean forward.", "jump up and down quickly."),
    ("To keep warm in winter,", "wear a thick coat and gloves.", "wear sandals and shorts."),
    ("To water the plants,", "use a watering can.", "use a frying pan with holes."),
    ("To send a letter,", "put a stamp on the envelope and post it.", "put it in the washing machine."),
    ("To carry soup to the table,", "pour it into a bowl.", "pour it into a paper envelope."),
    ("To hang a picture on the wall,", "hammer a nail into the wall and hang it.", "glue it to the ceiling fan."),
    ("To make a room smell fresh,", "open the windows for a while.", "close every window and burn toast."),
    ("To wake up early,", "set an alarm clock.", "stay up all night watching films."),
    ("To get a splinter out of a finger,", "use clean tweezers.", "use a spoon."),
    ("To keep milk from going sour,", "keep it in the fridge.", "keep it on a sunny windowsill."),
    ("To cross a busy street safely,", "wait for the green light.", "close your eyes and run."),
    ("To write on a blackboard,", "use a piece of chalk.", "use a piece of cheese."),
    ("To measure the length of a table,", "use a tape measure.", "use a thermometer."),
    ("To find out the time,", "look at a clock.", "look at a spoon."),
    ("To take a photograph,", "use a camera.", "use a toaster."),
    ("To fix a flat bicycle tyre,", "patch the inner tube and pump it up.", "paint the tyre blue."),
    ("To keep papers together,", "use a paper clip.", "use a teabag."),
    ("To cool down a hot drink,", "add an ice cube.", "put it on the stove."),
    ("To remove a stain from a shirt,", "wash it with soap and water.", "rub it with mud."),
    ("To light a dark cave,", "bring a torch.", "bring a mirror and no light."),
    ("To peel an orange,", "pull the skin off with your fingers.", "put it in the freezer for a week."),
    ("To stop a door from slamming,", "put a doorstop under it.", "oil the hinges of the window."),
    ("To get a cat down from a low branch,", "offer it some food and let it climb down.", "shout at the tree."),
    ("To make toast,", "put a slice of bread in the toaster.", "put a slice of bread in the freezer."),
    ("To keep rain off your head,", "wear a hood.", "wear a necklace."),
    ("To tighten a loose screw,", "turn it with a screwdriver.", "tap it with a feather."),
    ("To save a document on the computer,", "press the save button.", "turn off the screen."),
    ("To keep a candle burning,", "shield it from the wind.", "pour water on the wick."),
    ("To make a smoothie,", "blend fruit with milk or yoghurt.", "bake fruit in a paper bag."),
    ("To wash your hands,", "use soap and warm water.", "use sand and glue."),
    ("To catch a bus,", "wait at the bus stop.", "wait at the post office counter."),
    ("To make a cake rise,", "add baking powder to the batter.", "add ice cubes to the batter."),
    ("To keep a bicycle from being stolen,", "lock it to a rack.", "leave it in the middle of the road."),
    ("To clean your teeth,", "brush them with toothpaste.", "brush them with shoe polish."),
    ("To protect your eyes from bright sun,", "wear sunglasses.", "wear earmuffs."),
    ("To make a phone call,", "dial the number on the phone.", "write the number on a banana."),
    (
        "To store leftover soup,",
        "put it in a closed container in the fridge.",
        "leave it in the pot on the floor for a week.",
    ),
    ("To move a heavy box,", "lift it with your legs or use a trolley.", "kick it across the room."),
    ("To grow tomatoes,", "plant seeds in soil and water them.", "bury the tomatoes in sand and wait."),
    ("To cool a room in summer,", "switch on a fan.", "switch on the oven."),
    ("To find a book in a library,", "look it up in the catalogue.", "ask the pigeons outside."),
    ("To dry clothes outside,", "hang them on a line in the sun.", "hang them in a closed cupboard."),
    ("To keep shoes clean in the mud,", "wear rubber boots.", "wear paper slippers."),
    ("To soften butter for baking,", "leave it out at room temperature.", "put it in the freezer."),
    ("To shut off the water,", "turn the tap clockwise.", "turn on the radio."),
    ("To know if it will rain,", "check the weather forecast.", "count the spoons in the drawer."),
    ("To get to the top floor quickly,", "take the lift.", "take the stairs down to the basement."),
    ("To tie a parcel,", "wrap a string around it and knot it.", "wrap it in wet noodles."),
    ("To stir a pot of soup,", "use a long wooden spoon.", "use your bare hand."),
    ("To mark your place in a book,", "use a bookmark.", "tear out the page."),
    ("To unlock a phone,", "enter the passcode.", "shake it in a bucket of water."),
    ("To cook pasta,", "boil it in salted water.", "soak it in cold juice."),
    ("To blow out the candles on a cake,", "take a deep breath and blow.", "pour flour on them."),
]

SITUATIONS = [  # context (after the name), sensible ending
    ("was thirsty after the long run, so {p}", "drank a large glass of water."),
    ("heard the alarm ring at six in the morning, so {p}", "got out of bed and switched it off."),
    ("saw dark clouds gathering over the hills, so {p}", "took an umbrella before leaving the house."),
    ("burned {s} hand on the hot pan, so {p}", "held it under cold running water."),
    ("could not reach the top shelf, so {p}", "stood on a small stool to get the jar."),
    ("noticed that the plants were drooping, so {p}", "watered them straight away."),
    ("was cold in the tent at night, so {p}", "zipped up the sleeping bag and pulled on a hat."),
    ("spilled coffee on the table, so {p}", "wiped it up with a cloth."),
    ("was hungry when {p} came home, so {p}", "made a sandwich in the kitchen."),
    ("found the room too dark to read, so {p}", "turned on the lamp by the sofa."),
    ("missed the last bus home, so {p}", "called a taxi."),
    ("had a headache from staring at the screen, so {p}", "took a break and rested {s} eyes."),
    ("wanted to learn to swim, so {p}", "signed up for lessons at the local pool."),
    ("got a flat tyre on the way to work, so {p}", "pushed the bicycle to the repair shop."),
    ("saw that the milk had gone sour, so {p}", "poured it down the sink."),
    ("was late for the train, so {p}", "ran all the way to the station."),
    ("forgot {s} friend's birthday, so {p}", "called the next day to apologise."),
    ("noticed smoke coming from the toaster, so {p}", "unplugged it at once."),
    ("wanted to send photos to {s} family, so {p}", "emailed them that evening."),
    ("could not sleep because of the noise outside, so {p}", "closed the window and put in earplugs."),
    ("found a wallet on the pavement, so {p}", "handed it in at the police station."),
    ("was sweating in the summer heat, so {p}", "sat in the shade and drank some water."),
    ("dropped a glass on the kitchen floor, so {p}", "carefully swept up the broken pieces."),
    ("needed to buy bread, so {p}", "walked to the bakery around the corner."),
    ("wanted the cake to be ready for the party, so {p}", "baked it the evening before."),
    ("saw a child crying alone in the shop, so {p}", "helped the child find {s} parents."),
    ("got soaked in the rain, so {p}", "changed into dry clothes at home."),
    ("had an exam the next morning, so {p}", "revised {s} notes and went to bed early."),
    ("noticed the car was almost out of fuel, so {p}", "stopped at the next petrol station."),
    ("was given a new puzzle for {s} birthday, so {p}", "spread the pieces out on the table."),
    ("found the soup too bland, so {p}", "added a pinch of salt."),
    ("felt a cold coming on, so {p}", "stayed home and drank hot tea."),
    ("wanted to see the stars clearly, so {p}", "drove away from the city lights."),
    ("saw that the dog was pulling at its lead, so {p}", "took it out for a walk."),
    ("realised {p} had left the oven on, so {p}", "hurried back to switch it off."),
    ("could not open the jar, so {p}", "ran the lid under hot water and tried again."),
    ("noticed the bathroom tap dripping, so {p}", "called a plumber to fix it."),
    ("wanted to surprise {s} mother, so {p}", "cooked her favourite dinner."),
    ("found the door of the fridge open, so {p}", "closed it to keep the food cold."),
    ("could not find {s} glasses, so {p}", "searched every room until {p} found them."),
]


def choice_items(rng: random.Random) -> list[dict]:
    items = []
    for index, (goal, good, bad) in enumerate(PHYSICAL):
        choices = [good, bad] if index % 2 == 0 else [bad, good]  # the right answer is not always first
        items.append({"query": goal, "choices": choices, "label": choices.index(good)})
    endings = [ending for _, ending in SITUATIONS]
    for index, (context, ending) in enumerate(SITUATIONS):
        name, subject, possessive = PEOPLE[index % 16]
        fill = dict(p=subject, s=possessive)
        wrong = rng.sample([e for e in endings if e != ending], 3)
        choices = [e.format(**fill) for e in wrong]
        label = index % 4
        choices.insert(label, ending.format(**fill))
        items.append({"query": f"{name} {context.format(**fill)}", "choices": choices, "label": label})
    return items


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    rng = random.Random(20261122)
    for name, items in (("cloze", cloze_items()), ("choice", choice_items(rng))):
        with open(OUT / f"{name}.jsonl", "w", encoding="utf-8") as handle:
            for item in items:
                handle.write(json.dumps(item, ensure_ascii=False) + "\n")
        print(f"{OUT / name}.jsonl: {len(items)} items")


if __name__ == "__main__":
    main()
