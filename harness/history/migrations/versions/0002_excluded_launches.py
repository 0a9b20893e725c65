"""Excluded launches: point_results.excluded_launches (which launches the regression check left out as
disturbed, and why) and measurements.counted_value (the median over the launches it counts).

Rows stored before keep NULL in both: their value is the figure the history reads, as it was.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-25 12:45:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("point_results", sa.Column("excluded_launches", sa.JSON(), nullable=True))
    op.add_column("measurements", sa.Column("counted_value", sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("measurements") as batch:
        batch.drop_column("counted_value")
    with op.batch_alter_table("point_results") as batch:
        batch.drop_column("excluded_launches")
