"""Questions about the ``store`` database (an online shop)."""

from __future__ import annotations

from .base import Template as T
from .base import values

STORE = [
    T(
        "store",
        "customers_in_city",
        "List the first and last names of the customers who live in {city}.",
        "SELECT first_name, last_name FROM customers WHERE city = {city}",
        "SELECT DISTINCT city FROM customers ORDER BY city",
    ),
    T(
        "store",
        "products_in_category",
        "How many products are in the {category} category?",
        "SELECT COUNT(*) FROM products p JOIN categories c ON p.category_id = c.category_id "
        "WHERE c.name = {category}",
        "SELECT name AS category FROM categories ORDER BY name",
    ),
    T(
        "store",
        "orders_with_status",
        "How many orders have the status '{status}'?",
        "SELECT COUNT(*) FROM orders WHERE status = {status}",
        "SELECT DISTINCT status FROM orders ORDER BY status",
    ),
    T(
        "store",
        "revenue_by_category",
        "For each product category, what is the total revenue (quantity times unit price) of "
        "the items of orders with status '{status}'? Give the category name and the revenue.",
        "SELECT c.name, SUM(oi.quantity * oi.unit_price) FROM order_items oi "
        "JOIN orders o ON o.order_id = oi.order_id JOIN products p ON p.product_id = oi.product_id"
        " JOIN categories c ON c.category_id = p.category_id WHERE o.status = {status} "
        "GROUP BY c.name",
        "SELECT DISTINCT status FROM orders ORDER BY status",
    ),
    T(
        "store",
        "top_spenders",
        "Which {n} customers spent the most on orders with status '{status}'? Give their first "
        "name, last name and the amount spent (sum of quantity times unit price), highest first.",
        "SELECT c.first_name, c.last_name, SUM(oi.quantity * oi.unit_price) AS spent "
        "FROM customers c JOIN orders o ON o.customer_id = c.customer_id "
        "JOIN order_items oi ON oi.order_id = o.order_id WHERE o.status = {status} "
        "GROUP BY c.customer_id ORDER BY spent DESC LIMIT {n}",
        "SELECT n, status FROM (" + values("n", 3, 5, 10) + ") JOIN (SELECT DISTINCT status "
        "FROM orders WHERE status IN ('delivered', 'shipped')) ORDER BY n, status",
        sort_key=(2,),
    ),
    T(
        "store",
        "no_email_in_country",
        "How many customers in {country} have no email address on record?",
        "SELECT COUNT(*) FROM customers WHERE country = {country} AND email IS NULL",
        "SELECT DISTINCT country FROM customers WHERE email IS NULL ORDER BY country",
    ),
    T(
        "store",
        "product_ratings",
        "What is the average review rating of each product in the {category} category that has "
        "at least one review? Give the product name and its average rating.",
        "SELECT p.name, AVG(r.rating) FROM products p JOIN reviews r ON r.product_id = "
        "p.product_id JOIN categories c ON c.category_id = p.category_id "
        "WHERE c.name = {category} GROUP BY p.product_id, p.name",
        "SELECT name AS category FROM categories ORDER BY name",
    ),
    T(
        "store",
        "never_reviewed_in_city",
        "List the first and last names of the customers from {city} who never wrote a review.",
        "SELECT first_name, last_name FROM customers WHERE city = {city} AND customer_id NOT IN "
        "(SELECT customer_id FROM reviews)",
        "SELECT DISTINCT city FROM customers ORDER BY city",
    ),
    T(
        "store",
        "monthly_orders",
        "How many orders were placed in each month of {year}? Give the month as 'YYYY-MM' and "
        "the number of orders, in chronological order.",
        "SELECT strftime('%Y-%m', order_date) AS month, COUNT(*) FROM orders "
        "WHERE strftime('%Y', order_date) = {year} GROUP BY month ORDER BY month",
        "SELECT DISTINCT substr(order_date, 1, 4) AS year FROM orders ORDER BY year",
        sort_key=(0,),
    ),
    T(
        "store",
        "priciest_in_category",
        "What is the name and price of the most expensive product in the {category} category?",
        "SELECT p.name, p.price FROM products p JOIN categories c ON c.category_id = "
        "p.category_id WHERE c.name = {category} AND p.price = (SELECT MAX(p2.price) FROM "
        "products p2 WHERE p2.category_id = c.category_id)",
        "SELECT name AS category FROM categories ORDER BY name",
    ),
    T(
        "store",
        "big_orders",
        "List the ids of the orders whose total value (sum of quantity times unit price of "
        "their items) exceeds {amount} EUR.",
        "SELECT order_id FROM order_items GROUP BY order_id "
        "HAVING SUM(quantity * unit_price) > {amount}",
        values("amount", 1500, 2000, 2500, 3000),
    ),
    T(
        "store",
        "discontinued_in_stock",
        "List the names and stock of the discontinued products that still have units in stock.",
        "SELECT name, stock FROM products WHERE discontinued = 1 AND stock > 0",
    ),
    T(
        "store",
        "repeat_customers",
        "How many customers from {country} placed at least {k} orders?",
        "SELECT COUNT(*) FROM (SELECT o.customer_id FROM orders o JOIN customers c ON "
        "c.customer_id = o.customer_id WHERE c.country = {country} GROUP BY o.customer_id "
        "HAVING COUNT(*) >= {k})",
        "SELECT country, k FROM (SELECT DISTINCT country FROM customers) JOIN ("
        + values("k", 5, 8)
        + ") ORDER BY country, k",
    ),
    T(
        "store",
        "fee_by_status",
        "What is the average shipping fee of the orders of each status? Give the status and "
        "the average fee.",
        "SELECT status, AVG(shipping_fee) FROM orders GROUP BY status",
    ),
    T(
        "store",
        "category_ratings_ranked",
        "List every category with the average rating of the reviews of its products, best "
        "rated first.",
        "SELECT c.name, AVG(r.rating) AS avg_rating FROM categories c JOIN products p ON "
        "p.category_id = c.category_id JOIN reviews r ON r.product_id = p.product_id "
        "GROUP BY c.name ORDER BY avg_rating DESC",
        sort_key=(1,),
    ),
]
