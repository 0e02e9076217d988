-- The data-metadata cache: what `wormhole meta` answered for a data source
-- (its table list, or one table's columns), kept until the data source
-- changes (PutDataSource deletes its rows) or someone asks for a refresh.
CREATE TABLE datasource_meta (
    datasource  text NOT NULL REFERENCES data_sources (name) ON DELETE CASCADE ON UPDATE CASCADE,
    what        text NOT NULL CHECK (what IN ('tables', 'table')),
    tbl         text NOT NULL DEFAULT '',   -- "schema.name" for what = 'table', '' for 'tables'
    payload     jsonb NOT NULL,
    fetched_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (datasource, what, tbl)
);
