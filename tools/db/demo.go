package db

// DemoSchema is the small demo schema a fresh SQLite database is created
// with (and the PostgreSQL tests load into a schema of their own), so that a
// newcomer's first list_tables shows something real. It is written in the
// SQL both engines share: a few related tables, an index, a view, a passing
// check and a failing one (a check is a view named check_* whose rows are
// violations).
const DemoSchema = `
CREATE TABLE customers (
    id      INTEGER PRIMARY KEY,
    name    TEXT NOT NULL,
    email   TEXT NOT NULL UNIQUE,
    country TEXT NOT NULL DEFAULT 'NL'
);
CREATE TABLE products (
    id          INTEGER PRIMARY KEY,
    sku         TEXT NOT NULL UNIQUE,
    title       TEXT NOT NULL,
    price_cents INTEGER NOT NULL CHECK (price_cents >= 0),
    stock       INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE orders (
    id          INTEGER PRIMARY KEY,
    customer_id INTEGER NOT NULL REFERENCES customers (id),
    placed_on   TEXT NOT NULL,
    status      TEXT NOT NULL DEFAULT 'open'
);
CREATE INDEX orders_customer_idx ON orders (customer_id);
CREATE TABLE order_items (
    order_id   INTEGER NOT NULL REFERENCES orders (id) ON DELETE CASCADE,
    product_id INTEGER NOT NULL REFERENCES products (id),
    quantity   INTEGER NOT NULL CHECK (quantity > 0),
    PRIMARY KEY (order_id, product_id)
);
INSERT INTO customers (id, name, email, country) VALUES
    (1, 'Ada Lovelace', 'ada@example.org', 'GB'),
    (2, 'Edsger Dijkstra', 'edsger@example.org', 'NL'),
    (3, 'Grace Hopper', 'grace@example.org', 'US');
INSERT INTO products (id, sku, title, price_cents, stock) VALUES
    (1, 'BK-001', 'Notes on the Analytical Engine', 1999, 12),
    (2, 'BK-002', 'A Discipline of Programming', 3450, 3),
    (3, 'BK-003', 'Compilers for Humans', 2500, -2);
INSERT INTO orders (id, customer_id, placed_on, status) VALUES
    (1, 1, '2026-01-05', 'shipped'),
    (2, 2, '2026-02-11', 'open'),
    (3, 3, '2026-03-20', 'open');
INSERT INTO order_items (order_id, product_id, quantity) VALUES
    (1, 1, 2),
    (1, 2, 1),
    (2, 2, 1);
CREATE VIEW order_totals AS
    SELECT o.id AS order_id, c.name AS customer, SUM(i.quantity * p.price_cents) AS total_cents
    FROM orders o
    JOIN customers c ON c.id = o.customer_id
    JOIN order_items i ON i.order_id = o.id
    JOIN products p ON p.id = i.product_id
    GROUP BY o.id, c.name;
CREATE VIEW check_stock_not_negative AS
    SELECT id, sku, stock FROM products WHERE stock < 0;
CREATE VIEW check_orders_have_items AS
    SELECT o.id FROM orders o
    WHERE NOT EXISTS (SELECT 1 FROM order_items i WHERE i.order_id = o.id)
      AND o.status <> 'open';
`
