"""Step (b) of the round trip, shared by the two Python drivers (run by scripts/check-sdks).

Each driver passes a `fetch(cursor)` that asks its own generated client for one page of
project 7's receipts, ten at a time, and returns the page as that client parsed it.
"""


def walk_receipt_pages(fetch, page_type, first_cursor, check):
    """Follows nextCursor from `first_cursor` to the end and checks every page: parsed as
    `page_type`, no receipt repeated, newest first, hasMore exactly when nextCursor is not
    "", and more than one page."""
    seen, pages, cursor = [], 0, first_cursor
    while True:
        page = fetch(cursor)
        check(isinstance(page, page_type), f"page parsed as {type(page).__name__}")
        pages += 1
        ids = [r.id for r in page.items]
        check(0 < len(ids) <= 10 or not page.has_more, f"page {pages} holds {len(ids)} receipts")
        check(not set(ids) & set(seen), f"page {pages} repeats {sorted(set(ids) & set(seen))}")
        keys = [(r.created_at, int(r.id)) for r in page.items]
        check(keys == sorted(keys, reverse=True), f"page {pages} is not newest first")
        seen += ids
        check(page.has_more == (page.next_cursor != ""),
              f"page {pages}: hasMore {page.has_more} with nextCursor {page.next_cursor!r}")
        if not page.has_more:
            break
        check(pages < 50, "more than 50 pages")
        cursor = page.next_cursor
    check(pages >= 2, f"only {pages} page(s); the demo project has more than 10 receipts")
    return seen, pages
