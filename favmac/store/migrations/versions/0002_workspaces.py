"""Workspaces (each user's uploads and settings) and an index on refusals.

Revision ID: 0002
Revises: 0001
"""
import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "workspace_items",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("user_id", sa.String(200), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("data", sa.LargeBinary, nullable=False),
        sa.Column("meta", sa.Text, nullable=False),
        sa.Column("size", sa.BigInteger, nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("user_id", "name", name="uq_workspace_user_name"),
    )
    op.create_index("ix_refusals_at", "refusals", ["at"])


def downgrade():
    op.drop_index("ix_refusals_at", table_name="refusals")
    op.drop_table("workspace_items")
