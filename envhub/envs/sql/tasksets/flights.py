"""Questions about the ``flights`` database (airports, airlines, flights, bookings)."""

from __future__ import annotations

from .base import Template as T
from .base import values

FLIGHTS = [
    T(
        "flights",
        "departures_from_city",
        "How many flights depart from airports in {city}?",
        "SELECT COUNT(*) FROM flights f JOIN airports a ON a.code = f.origin WHERE a.city = {city}",
        "SELECT city FROM airports ORDER BY city",
    ),
    T(
        "flights",
        "route_schedule",
        "List the flight numbers and departure times of the flights from {origin} to {dest} "
        "(airport codes).",
        "SELECT flight_no, departure FROM flights WHERE origin = {origin} AND destination = {dest}",
        "SELECT DISTINCT origin, destination AS dest FROM flights ORDER BY origin, dest",
        limit=8,
    ),
    T(
        "flights",
        "cancelled_by_airline",
        "How many flights of {airline} were cancelled?",
        "SELECT COUNT(*) FROM flights f JOIN airlines a ON a.airline_id = f.airline_id "
        "WHERE a.name = {airline} AND f.status = 'cancelled'",
        "SELECT name AS airline FROM airlines ORDER BY name",
    ),
    T(
        "flights",
        "avg_delay_by_airline",
        "For each airline, what is the average delay in minutes of its delayed flights? Give the "
        "airline name and the average delay.",
        "SELECT a.name, AVG(f.delay_min) FROM flights f JOIN airlines a ON a.airline_id = "
        "f.airline_id WHERE f.status = 'delayed' GROUP BY a.airline_id",
    ),
    T(
        "flights",
        "busiest_airports",
        "Which {n} airports have the most bookings on flights departing from them? Give the "
        "airport code and the number of bookings, most first.",
        "SELECT f.origin, COUNT(*) AS n_bookings FROM bookings b JOIN flights f ON f.flight_id "
        "= b.flight_id GROUP BY f.origin ORDER BY n_bookings DESC LIMIT {n}",
        values("n", 2, 3, 4, 5, 6),
        sort_key=(1,),
    ),
    T(
        "flights",
        "revenue_by_class",
        "What is the total booking revenue per seat class on the flights of {airline}? Give "
        "the seat class and the revenue.",
        "SELECT b.seat_class, SUM(b.price) FROM bookings b JOIN flights f ON f.flight_id = "
        "b.flight_id JOIN airlines a ON a.airline_id = f.airline_id WHERE a.name = {airline} "
        "GROUP BY b.seat_class",
        "SELECT name AS airline FROM airlines ORDER BY name",
    ),
    T(
        "flights",
        "passengers_on_flight",
        "List the names of the passengers booked on the flight with id {fid}.",
        "SELECT p.name FROM passengers p JOIN bookings b ON b.passenger_id = p.passenger_id "
        "WHERE b.flight_id = {fid}",
        "SELECT flight_id AS fid FROM bookings GROUP BY flight_id HAVING COUNT(*) >= 4 "
        "ORDER BY fid",
    ),
    T(
        "flights",
        "long_flights_by_maker",
        "List the flight numbers of the flights longer than {km} km flown with a {maker} aircraft.",
        "SELECT f.flight_no FROM flights f JOIN aircraft ac ON ac.aircraft_id = f.aircraft_id "
        "WHERE f.distance_km > {km} AND ac.manufacturer = {maker}",
        "SELECT maker, km FROM (SELECT DISTINCT manufacturer AS maker FROM aircraft) JOIN ("
        + values("km", 1500, 2000)
        + ") ORDER BY maker, km",
    ),
    T(
        "flights",
        "class_bookings_by_nationality",
        "How many bookings in {seat_class} class were made by passengers whose nationality is "
        "{nationality}?",
        "SELECT COUNT(*) FROM bookings b JOIN passengers p ON p.passenger_id = b.passenger_id "
        "WHERE b.seat_class = {seat_class} AND p.nationality = {nationality}",
        "SELECT DISTINCT b.seat_class, p.nationality FROM bookings b JOIN passengers p ON "
        "p.passenger_id = b.passenger_id ORDER BY b.seat_class, p.nationality",
    ),
    T(
        "flights",
        "monthly_flights",
        "How many flights did {airline} schedule in each month? Give the month as 'YYYY-MM' and "
        "the number of flights, in chronological order.",
        "SELECT substr(f.departure, 1, 7) AS month, COUNT(*) FROM flights f JOIN airlines a ON "
        "a.airline_id = f.airline_id WHERE a.name = {airline} GROUP BY month ORDER BY month",
        "SELECT name AS airline FROM airlines ORDER BY name",
        sort_key=(0,),
    ),
    T(
        "flights",
        "domestic_flights",
        "How many flights have their origin and destination airports in the same country?",
        "SELECT COUNT(*) FROM flights f JOIN airports o ON o.code = f.origin JOIN airports d "
        "ON d.code = f.destination WHERE o.country = d.country",
    ),
    T(
        "flights",
        "max_price_from_city",
        "What is the highest price paid for a booking in {seat_class} class on a flight "
        "departing from {city}?",
        "SELECT MAX(b.price) FROM bookings b JOIN flights f ON f.flight_id = b.flight_id JOIN "
        "airports a ON a.code = f.origin WHERE b.seat_class = {seat_class} AND a.city = {city}",
        "SELECT DISTINCT b.seat_class, a.city FROM bookings b JOIN flights f ON f.flight_id = "
        "b.flight_id JOIN airports a ON a.code = f.origin ORDER BY b.seat_class, a.city",
    ),
    T(
        "flights",
        "passengers_by_model",
        "For each aircraft model, how many bookings are there on flights flown with it? Give "
        "the model and the number of bookings.",
        "SELECT ac.model, COUNT(b.booking_id) FROM aircraft ac JOIN flights f ON f.aircraft_id "
        "= ac.aircraft_id JOIN bookings b ON b.flight_id = f.flight_id GROUP BY ac.aircraft_id",
    ),
    T(
        "flights",
        "top_routes_by_revenue",
        "Which {n} routes (origin and destination airport codes) earned the most booking "
        "revenue? Give the origin, the destination and the revenue, highest first.",
        "SELECT f.origin, f.destination, SUM(b.price) AS revenue FROM flights f JOIN bookings b "
        "ON b.flight_id = f.flight_id GROUP BY f.origin, f.destination "
        "ORDER BY revenue DESC LIMIT {n}",
        values("n", 2, 3, 5, 10),
        sort_key=(2,),
    ),
]
