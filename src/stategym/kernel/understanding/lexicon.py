"""The English the matcher knows beyond any domain's tables: function words, question words
and synonym sets.

A synonym set is a concept (``@money``) and the words that express it; a word may belong to
several sets. The sets are ordinary English, written once for every domain: a domain's
phrase table says which words name a slot, the sets say which other words mean the same.
"""

from __future__ import annotations

_STOP_WORDS = """a an the and or but if so then than also just really exactly precisely roughly
    please kindly thank thanks hi hello hey ok okay sure
    i me my mine myself you your yours yourself we us our ours they them their it its this
    that these those there here he she his her one
    be is are am was were been being do does did done have has had having
    can could would will shall should may might must
    what which whom how why
    tell let like want wish need ask wonder
    any some anything something every all each much many more
    for of in on at onto as
    get go make take give see look put
    particular specific certain actually also still even quite very
    please mind okay fine good great sure right"""
STOP: frozenset[str] = frozenset(_STOP_WORDS.split())
"""Words that carry no slot (they are in nearly every question). ``need``, ``want`` and
``like`` are here because every slot can be needed or wanted; ``required`` is not a stop
word (it names the required attendees), so it is listed in a set below as well."""

QUESTION_WORDS: dict[tuple[str, ...], str] = {
    ("how", "much"): "@howmuch",
    ("how", "many"): "@howmany",
    ("more", "than", "one"): "@howmany",
    ("how", "long"): "@howlong",
    ("how", "soon"): "@howsoon",
    ("how", "quickly"): "@howsoon",
    ("how", "fast"): "@howsoon",
    ("how", "late"): "@howlate",
    ("how", "big"): "@howmuch",
    ("how", "large"): "@howmuch",
    ("how", "old"): "@howold",
    ("how", "expensive"): "@howmuch",
    ("out", "of"): "from",
    ("time", "of", "day"): "@timeofday",
    ("in", "the", "day"): "@timeofday",
    ("of", "the", "day"): "@timeofday",
    ("during", "the", "day"): "@timeofday",
    ("of", "that", "day"): "@timeofday",
    ("part", "of", "the", "day"): "@timeofday",
    ("time", "zone"): "@timezone",
    ("red", "eye"): "@timeofday",
    ("money", "back"): "refund",
    ("which", "make"): "brand",
    ("what", "make"): "brand",
    ("any", "make"): "brand",
    ("particular", "make"): "brand",
    ("preferred", "make"): "brand",
    ("specific", "make"): "brand",
    ("certain", "make"): "brand",
    ("favourite", "make"): "brand",
    ("favorite", "make"): "brand",
    ("the", "make"): "brand",
    ("a", "make"): "brand",
    ("give", "up"): "@sacrifice",
    ("trade", "off"): "@sacrifice",
    ("set", "aside"): "budget",
    ("rainy", "day"): "savings",
    ("nest", "egg"): "savings",
    ("cost", "centre"): "category",
    ("cost", "center"): "category",
    ("budget", "line"): "category",
    ("sort", "code"): "iban",
    ("bank", "details"): "iban",
    ("account", "details"): "iban",
    ("account", "number"): "iban",
    ("clock", "in"): "work",
    ("nice", "to", "have"): "optional",
    ("must", "have"): "required",
    ("left", "out"): "optional",
    ("do", "without"): "optional",
    ("non", "negotiable"): "@priority",
    ("come", "first"): "@priority",
    ("comes", "first"): "@priority",
    ("matter", "most"): "@priority",
    ("matters", "most"): "@priority",
    ("come", "before"): "@priority",
    ("comes", "before"): "@priority",
    ("ahead", "of"): "@priority",
    ("a", "must", "or"): "@priority",
    ("most", "important"): "@priority",
    ("more", "important"): "@priority",
    ("least", "important"): "@priority",
    ("less", "important"): "@priority",
    ("least", "essential"): "@priority",
    ("most", "essential"): "@priority",
    ("important", "than"): "@priority",
    ("matter", "more"): "@priority",
    ("matters", "more"): "@priority",
    ("care", "about", "most"): "@priority",
    ("care", "most"): "@priority",
    ("has", "to", "give"): "@sacrifice",
    ("have", "to", "give"): "@sacrifice",
    ("live", "without"): "@sacrifice",
    ("rank", "your"): "@priority",
    ("how", "would", "you", "rank"): "@priority",
    ("pecking", "order"): "@priority",
    ("order", "of", "importance"): "@priority",
    ("give", "way"): "@sacrifice",
    ("should", "i", "favor"): "@priority",
    ("should", "i", "favour"): "@priority",
    ("should", "we", "favor"): "@priority",
    ("should", "we", "favour"): "@priority",
    ("drop", "off"): "delivery",
    ("drop", "it", "off"): "delivery",
    ("drop", "them", "off"): "delivery",
    ("drop", "this", "off"): "delivery",
    ("should", "give"): "@sacrifice",
    ("not", "budge"): "@priority",
    ("matter", "the", "most"): "@priority",
    ("matters", "the", "most"): "@priority",
    ("take", "part"): "participate",
    ("taking", "part"): "participate",
    ("take", "place"): "happen",
    ("takes", "place"): "happen",
    ("me", "to", "do"): "@todo",
    ("should", "i", "do"): "@todo",
    ("find", "out"): "find",
    ("work", "for"): "suit",
    ("works", "for"): "suit",
    ("work", "best"): "suit",
    ("works", "best"): "suit",
    ("when", "in", "the", "day"): "@timeofday",
    ("take", "off"): "takeoff",
    ("order", "of", "business"): "agenda",
    ("rank", "these"): "@priority",
    ("rank", "what"): "@priority",
    ("rank", "the"): "@priority",
    ("head", "out"): "leave",
    ("heading", "out"): "leave",
    ("set", "off"): "leave",
    ("setting", "off"): "leave",
    ("set", "out"): "leave",
    ("setting", "out"): "leave",
    ("touch", "down"): "land",
    ("touches", "down"): "land",
    ("off", "to"): "headed",
}
"""Word sequences read as one token (matched before function words are dropped). "make"
after a determiner is the noun ("any make", "which make"): alone it is the function word of
"make sure". "come before", "ahead of" and "a must or ..." rank wishes ("Should getting it
paid at all come before arriving by the due date?", "Is the afternoon a must or a
nice-to-have?")."""

KEPT: dict[str, str] = {
    "who": "@who",
    "whom": "@who",
    "whose": "@who",
    "when": "@when",
    "where": "@where",
    "from": "from",
    "to": "to",
    "by": "by",
    "not": "not",
    "all": "@all",
    "else": "else",
    "everything": "@all",
    "or": "or",
    "most": "most",
    "least": "least",
    "first": "first",
    "last": "last",
    "much": "much",
    "long": "long",
    "time": "time",
    "with": "with",
    "into": "into",
    "must": "@must",
    "could": "@could",
    "we": "@we",
}
"""Function words kept because they decide the slot (``from`` vs ``to``, ``who``, ``when``;
``must`` asks who is required, ``could``/``we`` what is possible for the meeting rather than
for you), with the feature they become. Checked before :data:`STOP`."""

SYNONYMS: dict[str, str] = {
    "@money": (
        "budget spend spending afford price cost costs pay money cash dollar dollars $ "
        "expensive cheap pricey costly amount sum fund funds euro euros"
    ),
    "@limit": "limit cap ceiling maximum max most upper exceed over under within top",
    "@fee": "fee fees charge charges commission surcharge",
    "@refund": (
        "refund refundable refunded nonrefundable cancel cancellation cancellable flexible "
        "changeable flex"
    ),
    "@ticket": "fare ticket",
    "@daypart": (
        "morning mornings evening evenings afternoon afternoons night am pm daytime noon "
        "lunch midday dawn early late @timeofday"
    ),
    "@clock": "time hour hours clock @timeofday",
    "@depart": "depart departure leave takeoff embark embarkation",
    "@travel": "fly flight flights travel trip go head headed heading journey",
    "@day": "day days date dates weekday calendar week",
    "@place": "airport port city town place location located based country region",
    "@home": "home origin start starting begin beginning base",
    "@destination": "destination headed bound arrival arrive land landing into",
    "@seat": "seat seating sit sitting aisle",
    "@policy": "policy rule rules company corporate employer firm reimburse allowance",
    "@event": ("event festival conference season fair crowd crowded busy peak concert show week"),
    "@duration": "duration length long last lasting run minute minutes block session",
    "@attend": (
        "attend attendee attendees attendance join joining participant participants "
        "participate invite invited invitee invitees invitation guest guests come coming "
        "present include colleague colleagues member members person people"
    ),
    "@optional": (
        "optional mandatory required essential necessary critical skip miss without strictly "
        "absolutely needed"
    ),
    "@equipment": (
        "equipment facility facilities amenity amenities av projector screen camera video "
        "conferencing whiteboard board call link"
    ),
    "@room": "room space",
    "@work": "work working office job workday schedule core",
    "@timezone": "@timezone timezone utc gmt offset local abroad country countries",
    "@topic": (
        "agenda topic topics subject purpose about discuss discussion goal reason occasion "
        "title cover covered talk talking"
    ),
    "@brand": "brand brands manufacturer make maker makes label marque",
    "@product": "product item items article thing goods equipment order",
    "@buy": "buy buying purchase purchasing order ordering shop shopping",
    "@count": "quantity units unit pieces piece number count several @howmany",
    "@ship": ("address deliver delivered delivery ship shipped shipping send sent package parcel"),
    "@seller": "vendor vendors supplier suppliers seller sellers merchant retailer store",
    "@allowed": "approved allowed permitted authorized authorised approve permit",
    "@color": "color colorway shade hue finish black white red blue grey gray silver",
    "@deadline": "deadline due urgent soon quickly fast latest @howsoon by",
    "@invoice": "invoice invoices bill bills statement",
    "@id": "number id identifier reference ref code",
    "@payee": ("payee recipient beneficiary creditor receive receiving receiver"),
    "@account": "account accounts iban banking bank",
    "@balance": ("balance balances available enough sufficient cover left remaining have"),
    "@savings": "savings saving reserve reserves",
    "@convert": "convert conversion converted exchange fx foreign currency currencies",
    "@category": (
        "category categorize classify classification tag heading bookkeeping ledger "
        "file filed expense type"
    ),
    "@storage": (
        "storage space disk capacity gb gigabyte gigabytes terabyte free freed reclaim recover "
        "release room"
    ),
    "@idle": (
        "idle idleness unused inactive inactivity stale abandoned untouched dormant activity "
        "access accessed used"
    ),
    "@project": "project projects",
    "@team": "team group squad department",
    "@backup": (
        "retention backup backups snapshot snapshots snapshotted protect protected tier tiers "
        "retain"
    ),
    "@maintenance": "maintenance downtime offline outage",
    "@name": "name named called spell mean meant refer referring entity official",
    "@question": (
        "question ask asking restate rephrase clarify information info fact detail learn answer"
    ),
    "@other": "other second another else against compared versus",
    "@measure": (
        "measure attribute property metric criterion criteria basis dimension terms compare "
        "comparison rank feature"
    ),
    "@extreme": (
        "highest lowest biggest smallest largest maximum minimum most least top bottom first "
        "last cheapest oldest newest greatest high low max min big small large great old new "
        "cheap"
    ),
    "@grade": "grade level quality rating class tier",
    "@kind": "kind type sort class category",
    "@contact": "contact reach email phone call touch number",
    "@routing": "routing route",
    "@priority": (
        "priority priorities prioritize @priority compromise conflict clash clashes win wins "
        "beat outweigh trump precedence override"
    ),
    "@rather": "rather instead",
    "@sacrifice": "sacrifice drop trade @sacrifice lose",
    "@prefer": "prefer preference preferences preferred favorite favor wish wishes",
    "@choose": "choose pick select recommend decide suggest best option options",
    "@all": "@all @todo constraint constraints requirement requirements everything",
}
"""Concept -> the words (before stemming) that express it, separated by spaces."""
