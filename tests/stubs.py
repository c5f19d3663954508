"""Shared test doubles, from the public :mod:`pyterrier_instruct.testing`: a chat-completions server on 127.0.0.1 and a
copy of a tiny model with a chat template."""
from pyterrier_instruct.testing.models import ZEPHYR_TEMPLATE, with_chat_template  # noqa: F401
from pyterrier_instruct.testing.server import ChatServer  # noqa: F401
