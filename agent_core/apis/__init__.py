"""One adapter per wire API (``base.WireApi``) and the provider-neutral chain they derive (``chain``)."""
