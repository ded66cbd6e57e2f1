"""Path parameters shared by controllers, bounded so no value can overflow a bigint (list parameters:
app/api/pagination.py)."""

from __future__ import annotations

from typing import Annotated

from litestar.params import Parameter

MAX_ID = 2**63 - 1

SourceId = Annotated[int, Parameter(ge=1, le=MAX_ID, description="source id")]
RunId = Annotated[int, Parameter(ge=1, le=MAX_ID, description="run id")]
EntityId = Annotated[int, Parameter(ge=1, le=MAX_ID, description="entity id")]
TokenId = Annotated[int, Parameter(ge=1, le=MAX_ID, description="token id")]
