"""Entity types for the extractive provider, without a model: small word lists and the word before.

Capitalisation alone says "a name", not whose: ``Berlin`` and ``Postgres`` are capitalised like
``Alice``. A name is a PERSON when it starts with a known given name or is a two-word First Last
pair of unknown words; a LOCATION when it is a known place or follows ``in``/``from``/``near``...;
a PRODUCT when it is a known piece of software or service; otherwise OTHER rather than a guess.
"""

from __future__ import annotations

import re

ORG_HINT = re.compile(r"\b(Inc|Ltd|LLC|Corp|Company|Bank|University|Team|Group|GmbH|Foundation|Institute|Agency)\b")

GIVEN_NAMES = frozenset("""
aaron adam ahmed aisha alan albert alex alexander alice amanda amelia amir ana andrea andrew angela anna anne
antonio arjun ava ben benjamin bob carlos carol caroline charles charlie chen chloe chris christina christopher
claire daniel david diana diego dmitri ed edward elena eli elizabeth ella emily emma eric eva fatima felix fernando
frank george grace hana hannah harry helen henry hiro hugo ian ines inês inès irene isabel isabella jack jacob
james jane jason javier jennifer jessica jin joao joão john jon jonathan jose josé joseph juan julia julian kai
karen kate katherine kevin laura lea leo leon li liam lily linda lisa louis lucas lucy luis luisa maria marco
marcus maria mark marta martin mary matthew max maya mei mia michael miguel mike mohammed mohammad nadia nathan
nina noah nora olga oliver olivia omar oscar pablo paul pedro peter priya rachel rafael raj ravi rebecca richard
robert rosa ryan sam samuel sara sarah sean sofia sophia sophie stephen steve susan thomas tim tom tomas tomás
victor wei william xavier yuki yusuf zoe zoë zara
""".split())

PLACES = frozenset("""
amsterdam athens austin bangalore bangkok barcelona beijing berlin bogota boston brazil brussels budapest
buenos cairo california canada chicago china copenhagen delhi denmark dubai dublin england europe finland
france frankfurt geneva germany greece hamburg helsinki hong india ireland italy jakarta japan kenya kyiv
lagos lisbon london los madrid manila melbourne mexico miami milan montreal moscow mumbai munich nairobi
netherlands new norway oslo paris poland portugal porto prague rome santiago seattle seoul shanghai singapore
spain stockholm sweden switzerland sydney taipei texas tokyo toronto ukraine vancouver vienna warsaw
washington zurich africa asia america australia
""".split())

PRODUCTS = frozenset("""
postgres postgresql mysql sqlite redis kafka rabbitmq kubernetes docker terraform ansible python django flask
fastapi rails ruby java javascript typescript node react vue angular svelte rust go golang swift kotlin linux
ubuntu debian windows macos ios android aws azure gcp s3 lambda github gitlab bitbucket jira confluence slack
teams zoom notion figma stripe paypal shopify salesforce hubspot excel word powerpoint chrome firefox safari
elasticsearch opensearch mongodb cassandra snowflake bigquery airflow spark hadoop grafana prometheus sentry
datadog nginx apache celery pgvector openai chatgpt claude gemini llama obsidian
""".split())

# The last word of a name often says what kind of thing it is: "Billing Service", "Baker Street".
THING_ENDINGS = frozenset("service system platform api app server database cluster pipeline project sdk "
                          "engine tool library framework bot dashboard portal".split())
PLACE_ENDINGS = frozenset("street road avenue square office river park station airport city county lake "
                          "mountain bridge campus".split())

_PLACE_CUES = frozenset({"in", "from", "near", "to", "at", "across", "around", "outside", "visiting", "visited"})
_PRODUCT_CUES = frozenset({"on", "uses", "use", "using", "with", "via", "into", "migrated", "runs", "deployed"})


def entity_type(name: str, preceding: str = "") -> str:
    words = name.split()
    first = words[0].lower() if words else ""
    lowered = name.lower()
    last = words[-1].lower() if words else ""
    if ORG_HINT.search(name):
        return "ORG"
    if len(words) > 1 and last in THING_ENDINGS:
        return "PRODUCT"
    if len(words) > 1 and last in PLACE_ENDINGS:
        return "LOCATION"
    if lowered in PRODUCTS or first in PRODUCTS:
        return "PRODUCT"
    if lowered in PLACES or (first in PLACES and len(words) <= 3 and first not in GIVEN_NAMES):
        return "LOCATION"
    if first in GIVEN_NAMES:
        return "PERSON"
    cue = preceding.lower()
    if len(words) == 1 and cue in _PLACE_CUES:
        return "LOCATION"
    if len(words) == 1 and cue in _PRODUCT_CUES:
        return "PRODUCT"
    if len(words) == 2 and all(w[:1].isupper() and w[1:].islower() for w in words):
        return "PERSON"
    return "OTHER"
