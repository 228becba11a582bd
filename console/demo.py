"""The demo login and the tutorial's examples, loaded into an empty instance by `make run`."""

import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction

from knowledge.models import Document
from knowledge.services import document_create_from_text
from memories.actions.rules import session_for_key
from memories.actions.write import memory_create
from memories.models import Memory, MemoryType

DEMO_MEMORIES = [
    ("用户张三是一名Python开发者，专注于机器学习和数据分析", MemoryType.SEMANTIC, 0.8),
    ("李四是前端工程师，擅长React和Vue.js开发", MemoryType.SEMANTIC, 0.7),
    ("王五是产品经理，负责用户体验设计和需求分析", MemoryType.SEMANTIC, 0.6),
    ("张三今天完成了推荐模型的第一版训练，准确率达到了85%", MemoryType.EPISODIC, 0.7),
    ("The user prefers short answers with code examples.", MemoryType.SEMANTIC, 0.6),
    ("用户刚刚询问了如何部署Django应用", MemoryType.WORKING, 0.5),
]

DEMO_TEXTS = [
    (
        "python_intro",
        "Python是一种高级编程语言，由Guido van Rossum于1991年首次发布。Python的设计哲学强调代码的可读性和简洁的语法。",
    ),
    (
        "ml_basics",
        "机器学习是人工智能的一个分支，通过算法让计算机从数据中学习模式。主要包括监督学习、无监督学习和强化学习三种类型。",
    ),
    (
        "rag_concept",
        "RAG（检索增强生成）是一种结合信息检索和文本生成的AI技术。它通过检索相关知识来增强大语言模型的生成能力。",
    ),
]


def ensure_demo_user(username: str, password: str | None) -> tuple[object, str | None]:
    """The demo superuser; returns the password only when it was just generated (to print once)."""
    User = get_user_model()
    user = User.objects.filter(username=username).first()
    generated = None
    if user is None:
        generated = None if password else secrets.token_urlsafe(12)
        user = User.objects.create_superuser(username=username, email="", password=password or generated)
        login_file = settings.DATA_DIR / "demo-login.txt"
        login_file.write_text(f"username: {username}\npassword: {password or generated}\n")
        login_file.chmod(0o600)
    elif password and not user.check_password(password):
        user.set_password(password)
        user.save(update_fields=["password"])
    return user, generated


@transaction.atomic
def load_demo_data(user) -> bool:
    """Load the examples when the instance holds no data at all; returns whether it did."""
    if Memory.objects.exists() or Document.objects.exists():
        return False
    session = session_for_key(user=user, key="demo")
    for content, memory_type, importance in DEMO_MEMORIES:
        memory_create(
            user=user, content=content, memory_type=memory_type, importance=importance, session=session
        )
    for name, text in DEMO_TEXTS:
        # Through the real pipeline, in this process, so the demo is searchable as soon as `make run` serves.
        document_create_from_text(user=user, text=text, title=name, background=False)
    return True
