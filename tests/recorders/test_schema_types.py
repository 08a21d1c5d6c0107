"""The columns whose type differs on PostgreSQL (JSONB payloads and snapshots, the tsvector of
the search index) are declared so that SQLite never imports PostgreSQL's dialect; they must
still compile to PostgreSQL's types there and let SQLAlchemy cache the statements that name
them (a type that cannot be part of a cache key makes every such statement compile anew)."""

from __future__ import annotations

import warnings

import pytest
import sqlalchemy as sa

from sessionstore.storage import metadata

VARIANTS = [("events", "payload"), ("snapshots", "state"), ("search_index", "terms")]


@pytest.mark.parametrize(("table", "column"), VARIANTS)
def test_a_statement_naming_the_column_has_a_cache_key(table: str, column: str) -> None:
    statement = sa.select(metadata.tables[table].c[column])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # SQLAlchemy warns of a type it cannot cache
        assert statement._generate_cache_key() is not None


@pytest.mark.parametrize(
    ("table", "column", "on_sqlite", "on_postgres"),
    [
        ("events", "payload", "JSON", "JSONB"),
        ("snapshots", "state", "JSON", "JSONB"),
        ("search_index", "terms", "TEXT", "TSVECTOR"),
    ],
)
def test_each_database_gets_its_own_type(
    table: str, column: str, on_sqlite: str, on_postgres: str
) -> None:
    kind = metadata.tables[table].c[column].type
    assert kind.compile(dialect=sa.create_engine("sqlite://").dialect) == on_sqlite
    assert kind.compile(dialect=sa.create_engine("postgresql+psycopg://").dialect) == on_postgres
