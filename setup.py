"""Package discovery: the top-level sql/ and udfs/ folders ship as kanon_duckdb.sql / kanon_duckdb.udfs
(metadata lives in pyproject.toml)."""
from setuptools import find_packages, setup

setup(packages=find_packages(include=["kanon_duckdb", "kanon_duckdb.*"])
      + ["kanon_duckdb.udfs", "kanon_duckdb.sql"])
