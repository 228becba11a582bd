"""memories.subjects: who a memory or a question is about, the people the user names, and a fact said back."""

import pytest

from memories.facts import SELF
from memories.subjects import acquaintances, asked_slot, second_person, self_name, subject


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I keep bees on the roof", SELF),
        ("The user's sourdough starter is called Gus", SELF),
        ("我养了一只橘猫", SELF),
        ("用户每周三游泳", SELF),
        ("Tomasz repaired the tandem bike", "tomasz"),
        ("Farida works at Kestrel Labs", "farida"),
        ("赵磊在阿里巴巴工作", "赵磊"),
        ("孙悦昨天搬去了杭州", "孙悦"),
        ("Yusuf在美团上班", "yusuf"),
        # No one is the subject: a noun phrase, an organisation, a day.
        ("Standup with the deck crew on Tuesday", None),
        ("Quarterly budget review moved to Friday", None),
        ("明天在家休息", None),
        ("周末去爬山", None),
    ],
)
def test_the_subject_is_the_user_a_named_person_or_nobody(text, expected):
    assert subject(text) == expected


def test_a_memory_naming_the_user_in_passing_gives_that_name():
    assert self_name("用户陈静是一名护士，在社区医院上夜班") == "陈静"
    assert self_name("The user, Amara, is a violinist") == "Amara"
    assert self_name("用户今天在家办公") is None  # 今天 is a day, not a name
    assert self_name("The user plays the oboe") is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Ingrid is my cousin.", [("Ingrid", "cousin")]),
        ("My flatmate Yusuf cooks on Sundays", [("Yusuf", "flatmate")]),
        ("The user's best friend is Nadia Haddad", [("Nadia Haddad", "best friend")]),
        ("Bruno, my brother, lives in Recife", [("Bruno", "brother")]),
        ("孙磊是我的同学", [("孙磊", "同学")]),
        ("我的室友王芳是护士", [("王芳", "室友")]),
        ("用户的舅舅叫刘强", [("刘强", "舅舅")]),
        # A relation word with no person after it, or a person with no relation.
        ("My neighbour is very loud", []),
        ("我的同事都很好", []),
        ("Ingrid lives in Tromsø", []),
    ],
)
def test_the_people_the_user_names_come_with_their_relation(text, expected):
    assert acquaintances(text) == expected


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("Where do I work?", (SELF, "employer")),
        ("who do I work for these days", (SELF, "employer")),
        ("Where does Farida work?", ("farida", "employer")),
        ("Where am I living now?", (SELF, "home")),
        ("What's my name?", (SELF, "name")),
        ("How old is the user?", (SELF, "age")),
        ("What do I do for a living?", (SELF, "role")),
        ("Who is Bruno's boss?", ("bruno", "manager")),
        ("What languages do I speak?", (SELF, "speaks:")),
        ("What is my favourite cheese?", (SELF, "favourite:cheese")),
        ("Who is my cousin?", (SELF, "attribute:cousin")),
        ("我在哪儿上班？", (SELF, "employer")),
        ("请问孙悦在哪里工作", ("孙悦", "employer")),
        ("我住在哪？", (SELF, "home")),
        ("我今年几岁了", (SELF, "age")),
        ("我会说哪些语言", (SELF, "speaks:")),
        ("我的老板是谁？", (SELF, "manager")),
        ("Where is the ferry terminal?", None),
        ("What do you know about me?", None),
        ("明天会下雨吗", None),
    ],
)
def test_a_question_names_the_slot_it_asks_for(question, expected):
    assert asked_slot(question) == expected


@pytest.mark.parametrize(
    ("fact", "said"),
    [
        ("The user works at Lumen Bank as a risk analyst", "You work at Lumen Bank as a risk analyst."),
        ("The user teaches chemistry", "You teach chemistry."),
        ("The user carries an inhaler", "You carry an inhaler."),
        ("The user's dentist is Dr Okafor.", "Your dentist is Dr Okafor."),
        ("The user is allergic to peanuts", "You are allergic to peanuts."),
        ("The user doesn't eat pork", "You don't eat pork."),
        ("I've got two kayaks", "You have got two kayaks."),
        ("My bike is red", "Your bike is red."),
        ("用户在网易做测试工程师", "你在网易做测试工程师。"),
        ("用户名叫林晓", "你叫林晓。"),
        ("我的车是白色的。", "你的车是白色的。"),
    ],
)
def test_a_fact_about_the_user_is_said_back_to_them(fact, said):
    assert second_person(fact) == said
