"""lakecompact: Debezium change streams into compacted Hive tables on a data lake, on Spark."""

from pathlib import Path

__version__ = "0.1.0"


def data_folder(installed: str, checkout: str) -> Path:
    """A folder of the data the package ships: `installed` inside the installed package, or, run from a checkout,
    its source `checkout` at the top of the checkout (pyproject.toml's package-dir maps the one to the other)."""
    package = Path(__file__).resolve().parent
    top = package.parent
    return top / checkout if (top / "pyproject.toml").is_file() else package / installed
