-- 0012_calendars.sql - business calendars.
--
-- calendars: a named calendar of a team, in a time zone, with its business
-- weekdays (ISO numbers, 1 = Monday). calendar_days: dated exceptions, a day
-- excluded (never a business day) or included (always one). A business day
-- is (its weekday in weekdays and not excluded) or included (lib/orr_cal.h).
-- A task names a calendar in its spec ("calendar", "calendar_policy");
-- keplerd reads every calendar with its days and re-reads them on
-- "calendar.changed".
CREATE TABLE calendars (
    id           bigserial PRIMARY KEY,
    name         text NOT NULL UNIQUE,
    team_id      bigint NOT NULL REFERENCES teams(id),
    timezone     text NOT NULL DEFAULT 'UTC',
    description  text NOT NULL DEFAULT '',
    weekdays     integer[] NOT NULL DEFAULT '{1,2,3,4,5}',
    created_by   text NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE calendar_days (
    calendar_id  bigint NOT NULL REFERENCES calendars(id) ON DELETE CASCADE,
    day          date NOT NULL,
    kind         text NOT NULL CHECK (kind IN ('excluded', 'included')),
    note         text NOT NULL DEFAULT '',
    PRIMARY KEY (calendar_id, day)
);
