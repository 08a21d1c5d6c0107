"""Alembic environment: migrates the database of the connection the store hands over, or of
`sqlalchemy.url` / `$SESSIONSTORE_URL` / `sessions.db` when run as `alembic upgrade head`."""

from __future__ import annotations

import logging.config

from alembic import context

from sessionstore.storage import compared, metadata, migration_connection, resolve_url

config = context.config
target_metadata = metadata


def include_name(name: str | None, type_: str, parent_names: object) -> bool:
    """What `alembic check` compares: not the full-text index's dialect parts (`compared`)."""
    return compared(name)


if config.config_file_name is not None and config.attributes.get("connection") is None:
    logging.config.fileConfig(config.config_file_name, disable_existing_loggers=False)


def run_offline() -> None:
    context.configure(
        url=resolve_url(config.get_main_option("sqlalchemy.url")),
        target_metadata=target_metadata,
        literal_binds=True,
        include_name=include_name,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        context.configure(
            connection=connection, target_metadata=target_metadata, include_name=include_name
        )
        with context.begin_transaction():
            context.run_migrations()
        return
    url = resolve_url(config.get_main_option("sqlalchemy.url"))
    with migration_connection(url) as own_connection:
        context.configure(
            connection=own_connection, target_metadata=target_metadata, include_name=include_name
        )
        with context.begin_transaction():
            context.run_migrations()


if context.is_offline_mode():
    run_offline()
else:
    run_online()
