-- The store database: an online shop: products, customers, orders, reviews.
-- Rows: envs/sql/generators.py, seeded. Comments inside CREATE TABLE are kept by sqlite and shown
-- to the model with the schema: they say what codes and units mean.
CREATE TABLE categories (
  category_id INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE
);
CREATE TABLE products (
  product_id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  category_id INTEGER NOT NULL REFERENCES categories(category_id),
  price REAL NOT NULL,          -- list price in EUR
  stock INTEGER NOT NULL,       -- units in the warehouse
  discontinued INTEGER NOT NULL -- 1 if no longer sold, else 0
);
CREATE TABLE customers (
  customer_id INTEGER PRIMARY KEY,
  first_name TEXT NOT NULL,
  last_name TEXT NOT NULL,
  email TEXT,                   -- NULL when unknown
  city TEXT NOT NULL,
  country TEXT NOT NULL,
  signup_date TEXT NOT NULL     -- ISO date YYYY-MM-DD
);
CREATE TABLE orders (
  order_id INTEGER PRIMARY KEY,
  customer_id INTEGER NOT NULL REFERENCES customers(customer_id),
  order_date TEXT NOT NULL,     -- ISO date YYYY-MM-DD
  status TEXT NOT NULL,         -- 'pending', 'shipped', 'delivered', 'cancelled' or 'returned'
  shipping_fee REAL NOT NULL    -- EUR
);
CREATE TABLE order_items (
  order_id INTEGER NOT NULL REFERENCES orders(order_id),
  product_id INTEGER NOT NULL REFERENCES products(product_id),
  quantity INTEGER NOT NULL,
  unit_price REAL NOT NULL,     -- EUR actually charged per unit
  PRIMARY KEY (order_id, product_id)
);
CREATE TABLE reviews (
  review_id INTEGER PRIMARY KEY,
  product_id INTEGER NOT NULL REFERENCES products(product_id),
  customer_id INTEGER NOT NULL REFERENCES customers(customer_id),
  rating INTEGER NOT NULL,      -- 1 (worst) to 5 (best)
  review_date TEXT NOT NULL     -- ISO date YYYY-MM-DD
);
