"""Reporting: the JSON document, terminal tables, the HTML page, and decoded views of cassettes."""
