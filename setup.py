"""Only what pyproject.toml cannot say: the package list, which adds the top-level folders
resources/ and sensors/ under the dia_assets namespace (mapped in [tool.setuptools.package-dir])."""

from setuptools import find_namespace_packages, setup

MOUNTED = ["dia_assets.resources", "dia_assets.sensors"]

setup(packages=[*find_namespace_packages(include=["dia_assets", "dia_assets.*"], exclude=["*.__pycache__"]), *MOUNTED])
