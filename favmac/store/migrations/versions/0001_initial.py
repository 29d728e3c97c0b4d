"""The first store: programs, their settings versions, events, patients, labels; refusals.

Revision ID: 0001
Revises:
"""
import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "programs",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("name", sa.String(200), nullable=False, unique=True),
        sa.Column("team", sa.String(200), nullable=False),
        sa.Column("codes", sa.Text, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("created_by", sa.String(200), nullable=False),
        sa.Column("last_seq", sa.Integer, nullable=False),
    )
    op.create_table(
        "versions",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("program_id", sa.Integer, sa.ForeignKey("programs.id"), nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("seq", sa.Integer, nullable=False),
        sa.Column("settings", sa.Text, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("user_id", sa.String(200), nullable=False),
        sa.UniqueConstraint("program_id", "version", name="uq_versions_program_version"),
    )
    op.create_table(
        "events",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("program_id", sa.Integer, sa.ForeignKey("programs.id"), nullable=False),
        sa.Column("seq", sa.Integer, nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("user_id", sa.String(200), nullable=False),
        sa.Column("user_name", sa.String(200), nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("batch", sa.String(200), nullable=False),
        sa.Column("n_patients", sa.Integer, nullable=False),
        sa.Column("payload", sa.LargeBinary, nullable=False),
        sa.UniqueConstraint("program_id", "seq", name="uq_events_program_seq"),
    )
    big = sa.BigInteger().with_variant(sa.Integer, "sqlite")
    for name in ("patients", "labels"):
        op.create_table(
            name,
            sa.Column("id", big, primary_key=True, autoincrement=True),
            sa.Column("program_id", sa.Integer, sa.ForeignKey("programs.id"), nullable=False),
            sa.Column("patient_id", sa.String(400), nullable=False),
            sa.Column("seq", sa.Integer, nullable=False),
            sa.UniqueConstraint("program_id", "patient_id", name=f"uq_{name}_program_patient"),
        )
    op.create_table(
        "refusals",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("user_id", sa.String(200), nullable=False),
        sa.Column("user_name", sa.String(200), nullable=False),
        sa.Column("action", sa.String(32), nullable=False),
        sa.Column("program", sa.String(200), nullable=True),
        sa.Column("team", sa.String(200), nullable=True),
        sa.Column("message", sa.Text, nullable=False),
    )


def downgrade():
    for name in ("refusals", "labels", "patients", "events", "versions", "programs"):
        op.drop_table(name)
