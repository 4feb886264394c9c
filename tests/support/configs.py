"""What lakecompact derives from a config alone (no lake, no Spark), for a minimal config."""

from __future__ import annotations

from lakecompact import config as config_module
from lakecompact.spark import session_conf


def session_conf_of(spark: dict, *, one_shot: bool = False) -> dict[str, str]:
    """The Spark settings lakecompact gives a session of a config whose [spark] table is `spark`."""
    config = config_module.from_dict({"warehouse": "/tmp/w", "source": {"kind": "files", "paths": ["/tmp/e"]},
                                      "spark": spark})
    return session_conf(config, one_shot=one_shot)
