"""The RL parquet schema and writer: pyarrow without pandas, imported only when ``rl.parquet`` is written.

pyarrow's conversions of Python objects (``Table.from_pylist``, ``pa.array``) import pandas when it
is installed (1 to 3 s, for 0 rows too), so the table is built by pyarrow's JSON reader instead:
the same table, with no pandas and in a fraction of the time.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.json as pj
import pyarrow.parquet as pq

_MSG = pa.struct([("role", pa.string()), ("content", pa.string())])
_CALL = pa.struct([("name", pa.string()), ("arguments", pa.string())])

RL_SCHEMA = pa.schema(
    [
        ("data_source", pa.string()),
        ("prompt", pa.list_(_MSG)),
        ("agent_name", pa.string()),
        ("ability", pa.string()),
        (
            "reward_model",
            pa.struct(
                [
                    ("style", pa.string()),
                    (
                        "ground_truth",
                        pa.struct(
                            [
                                ("calls", pa.list_(_CALL)),
                                ("mutates", pa.bool_()),
                                ("answer_facts", pa.list_(pa.string())),
                                ("masked_arguments", pa.list_(pa.string())),
                            ]
                        ),
                    ),
                ]
            ),
        ),
        (
            "extra_info",
            pa.struct(
                [
                    ("task_id", pa.string()),
                    ("env_id", pa.string()),
                    ("split", pa.string()),
                    ("difficulty", pa.float64()),
                    ("signature", pa.string()),
                    ("initial_state", pa.string()),
                    ("expected_state", pa.string()),
                    ("tools", pa.string()),
                ]
            ),
        ),
    ]
)
"""The fixed schema of ``rl.parquet``."""


def rl_table(rows: list[dict[str, Any]]) -> pa.Table:
    """RL rows as a pyarrow table with :data:`RL_SCHEMA` (keys the schema lacks are ignored, missing ones null)."""
    if not rows:
        return pa.Table.from_batches([], schema=RL_SCHEMA)  # (schema.empty_table() imports pandas)
    data = "\n".join(json.dumps(row, ensure_ascii=False) for row in rows).encode()
    return pj.read_json(
        io.BytesIO(data),
        read_options=pj.ReadOptions(block_size=max(len(data), 1 << 20), use_threads=False),
        parse_options=pj.ParseOptions(explicit_schema=RL_SCHEMA, unexpected_field_behavior="ignore"),
    )


def write_rl_parquet(rows: list[dict[str, Any]], path: Path) -> None:
    """Write ``rows`` to a parquet file at ``path``."""
    pq.write_table(rl_table(rows), path)
