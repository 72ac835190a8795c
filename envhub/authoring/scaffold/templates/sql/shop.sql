CREATE TABLE customer (id INTEGER PRIMARY KEY, name TEXT NOT NULL, city TEXT NOT NULL);
CREATE TABLE product (id INTEGER PRIMARY KEY, name TEXT NOT NULL, price REAL NOT NULL);
CREATE TABLE purchase (
  id INTEGER PRIMARY KEY,
  customer_id INTEGER NOT NULL REFERENCES customer(id),
  product_id INTEGER NOT NULL REFERENCES product(id),
  quantity INTEGER NOT NULL
);
INSERT INTO customer VALUES (1, 'Ana', 'Lisbon'), (2, 'Ben', 'Oslo'), (3, 'Chen', 'Lisbon');
INSERT INTO product VALUES (1, 'pen', 1.5), (2, 'notebook', 4.0), (3, 'lamp', 22.0);
INSERT INTO purchase VALUES (1, 1, 1, 10), (2, 1, 3, 1), (3, 2, 2, 3), (4, 3, 1, 2);
