"""The questions simulated users ask, with the facts the scripted model answers from.

A fact is one sentence, or a pair (metric wording, US wording) when it states a
measurement. Half of the questions ask for a measurement, so a preference for
metric units matters only there, as it would in life.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

Fact = str | tuple[str, str]


def words(text: str) -> int:
    """Words in a text, as a reader counts them."""
    return len(re.findall(r"[^\W_]+(?:['\u2019.,-][^\W_]+)*", text))


@dataclass(frozen=True)
class Question:
    """A question, its facts in order of importance, and where they come from."""

    text: str
    facts: tuple[Fact, ...]
    source: str

    @property
    def measurement(self) -> bool:
        """Whether the answer states a measurement (so units matter)."""
        return any(isinstance(f, tuple) for f in self.facts)


CORPUS: tuple[Question, ...] = (
    Question(
        "What is the distance from the Earth to the Moon?",
        (
            (
                "The Moon orbits at an average distance of about 384,400 km.",
                "The Moon orbits at an average distance of about 238,900 miles.",
            ),
            "Its orbit is slightly elliptical, so the distance changes over the month.",
            (
                "At its closest it comes within about 363,300 km of us.",
                "At its closest it comes within about 225,700 miles of us.",
            ),
            "Light needs about 1.3 seconds to cross that gap.",
        ),
        "NASA Moon fact sheet",
    ),
    Question(
        "What is the height of Mount Everest?",
        (
            (
                "Mount Everest is 8,849 m tall, according to the latest survey.",
                "Mount Everest is 29,032 feet tall, according to the latest survey.",
            ),
            "China and Nepal measured it together and announced the figure in 2020.",
            "It still grows very slowly as the Indian plate pushes north.",
            "The air pressure at the summit is about a third of that at sea level.",
        ),
        "National Geographic, 2020 survey",
    ),
    Question(
        "What oven temperature is best for baking bread?",
        (
            (
                "Most crusty loaves bake well at about 230 °C.",
                "Most crusty loaves bake well at about 450 °F.",
            ),
            "Preheat the oven fully so the crust sets quickly.",
            (
                "Enriched doughs such as brioche prefer a gentler 180 °C.",
                "Enriched doughs such as brioche prefer a gentler 350 °F.",
            ),
            "Steam in the first minutes helps the loaf rise before the crust hardens.",
        ),
        "King Arthur Baking guide",
    ),
    Question(
        "What is the weight of an adult African elephant?",
        (
            (
                "An adult male African elephant weighs about 6,000 kg.",
                "An adult male African elephant weighs about 13,000 pounds.",
            ),
            (
                "Females are smaller, at around 3,000 kg.",
                "Females are smaller, at around 6,600 pounds.",
            ),
            "They are the heaviest land animals alive today, well ahead of rhinos and hippos.",
            ("A newborn calf weighs about 100 kg.", "A newborn calf weighs about 220 pounds."),
        ),
        "Smithsonian National Zoo",
    ),
    Question(
        "What is the distance of a marathon?",
        (
            ("A marathon is 42.195 km long.", "A marathon is 26.2 miles long."),
            "The distance was fixed at the 1908 London Olympics and made official in 1921.",
            "Courses are measured along the shortest route a runner can take.",
            ("A half marathon is 21.1 km.", "A half marathon is 13.1 miles."),
        ),
        "World Athletics competition rules",
    ),
    Question(
        "What is the speed of sound in air?",
        (
            (
                "Sound travels at about 343 m/s in dry air at 20 °C.",
                "Sound travels at about 1,125 feet per second in dry air at 68 °F.",
            ),
            ("That is about 1,235 km/h.", "That is about 767 mph."),
            "It is faster in warm air and slower in cold air.",
            "In water sound travels more than four times as fast.",
        ),
        "NIST reference data",
    ),
    Question(
        "What is the depth of the Mariana Trench?",
        (
            (
                "Its deepest point, the Challenger Deep, lies about 10,935 m below sea level.",
                "Its deepest point, the Challenger Deep, lies about 35,876 feet below sea level.",
            ),
            "It lies in the western Pacific Ocean, east of the Mariana Islands.",
            "The water pressure at the bottom is over a thousand times that at the surface.",
            "Only a handful of crewed dives have reached the bottom.",
        ),
        "NOAA Ocean Exploration",
    ),
    Question(
        "What volume of water should an adult drink each day?",
        (
            (
                "Guidelines suggest about 2 litres a day for women and 2.5 litres for men.",
                "Guidelines suggest about 2 quarts a day for women and 2.6 quarts for men.",
            ),
            "About a fifth of it usually comes from food.",
            "Heat, exercise and illness raise the need.",
            "Thirst is a reliable guide for most healthy adults.",
        ),
        "European Food Safety Authority",
    ),
    Question(
        "Why is the sky blue?",
        (
            "Sunlight contains every colour of the visible spectrum.",
            "Air molecules scatter short blue wavelengths much more than long red ones.",
            "This Rayleigh scattering sends blue light across the whole sky.",
            "At sunset the light crosses more air, so the blues are scattered away.",
        ),
        "Encyclopaedia Britannica",
    ),
    Question(
        "How do vaccines train the immune system?",
        (
            "A vaccine shows the immune system a harmless piece or copy of a germ.",
            "The body makes antibodies and memory cells against it.",
            "If the real germ arrives later, those cells recognise it and respond fast.",
            "This prevents the illness or makes it much milder.",
        ),
        "World Health Organization",
    ),
    Question(
        "What causes the seasons on Earth?",
        (
            "The axis of the Earth is tilted by about 23.5 degrees.",
            "As the Earth orbits the Sun, each hemisphere leans towards or away from it.",
            "Leaning towards the Sun brings higher sunlight and longer days, so summer.",
            "The changing distance to the Sun matters far less than the tilt.",
        ),
        "NASA Space Place",
    ),
    Question(
        "How does compound interest work?",
        (
            "You earn interest on your savings and on the interest already added.",
            "Each period, the interest is added to the balance.",
            "The next period's interest is then worked out on the larger balance.",
            "Over many years this makes the balance grow faster and faster.",
        ),
        "Investor.gov",
    ),
    Question(
        "Why do cats purr?",
        (
            "Cats purr by rapidly twitching the muscles of the larynx.",
            "They purr when content, but also when stressed or hurt.",
            "Purring may help calm them and signal to others.",
            "Some research suggests the vibrations help bones and tissue heal.",
        ),
        "Scientific American",
    ),
    Question(
        "What is photosynthesis?",
        (
            "Photosynthesis is how plants turn light into chemical energy.",
            "They take in carbon dioxide from the air and water from the soil.",
            "Using sunlight, chlorophyll drives the reactions that make glucose.",
            "Oxygen is released into the air as a by-product.",
        ),
        "Khan Academy biology",
    ),
    Question(
        "How do noise-cancelling headphones work?",
        (
            "Small microphones pick up the sound around you.",
            "A chip creates a sound wave that is the exact opposite of that noise.",
            "The two waves cancel each other out before they reach your ear.",
            "It works best on steady low sounds such as engine hum.",
        ),
        "IEEE Spectrum",
    ),
    Question(
        "Why does bread go stale?",
        (
            "Bread goes stale mainly because its starch recrystallises.",
            "Water moves out of the starch and the crumb turns firm.",
            "This happens fastest at fridge temperatures.",
            "Warming the bread briefly reverses part of the change.",
        ),
        "American Chemical Society",
    ),
)

BY_TEXT = {q.text: q for q in CORPUS}
